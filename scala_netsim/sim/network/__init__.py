"""The network of cells' floor: its air (`air`), the radio map (`radio_map`), the schedulers
(`schedulers`), a transfer's life (`transfer`, walked by `link`; `arq`, `backhaul`, `pool`,
`rows`), fading (`fading`), the NR blocks (`nr`) and the link's settings (`settings`). It
stands on the simulator's floor (the cell, the link's messages, the drops) and beside
config/."""

"""FLOP counts measured from the real computation with torch's FlopCounterMode."""

from torch.utils.flop_counter import FlopCounterMode


class FlopMeter:
    """Runs a computation and returns its FLOPs.

    The first call for a key (model part, step kind, batch size) runs under FlopCounterMode
    and caches the count; later calls with the same key run at full speed and reuse it.
    """

    def __init__(self):
        self._flops = {}

    def run(self, key, fn, *args, **kwargs):
        """(fn(*args, **kwargs), flops of that call)."""
        if key in self._flops:
            return fn(*args, **kwargs), self._flops[key]
        with FlopCounterMode(display=False) as counter:
            out = fn(*args, **kwargs)
        self._flops[key] = counter.get_total_flops()
        return out, self._flops[key]

    @property
    def counts(self) -> dict:
        return dict(self._flops)

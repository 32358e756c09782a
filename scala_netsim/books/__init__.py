"""The books layer: a run's records built and checked, from plain rows and tables (their
columns declared in core.columns). Building: a round's row of rounds.csv (books.rounds), the
radio and energy columns (books.radio), summary.json (books.summary), the in-memory books as
tables (books.tables), how a TDD frame times a transfer (books.duplexing). Checking: events,
rounds, grants, transfers, radio and drops (books.invariants), asynchronous versions
(books.versions), a network's blocks, turns and air record (books.blocks) with every rate
derived again (books.air_rates). It imports the core and the channel's math only: the
simulator calls its checks on its own books, the runner on a run's."""

"""Named seed streams: stable values, independence, no offsets."""

import numpy as np
import pytest

from scala_netsim.core.seeds import STREAMS, Seeds


def test_top_level_streams_are_the_seed_sequence_children_in_a_fixed_order():
    children = np.random.SeedSequence(7).spawn(len(STREAMS))
    seeds = Seeds(7)
    for name, child in zip(STREAMS, children, strict=True):
        assert seeds.seed(name) == int(child.generate_state(1, dtype=np.uint64)[0] >> 1)
        assert seeds[name] == seeds.seed(name)


def test_named_children_differ_from_each_other_and_from_their_parent():
    seeds = Seeds(0)
    values = {seeds.seed("model"), seeds.seed("model", "sfl_aux_head"),
              seeds.seed("model", "fedconcat_classifier"),
              seeds.seed("model", "fedconcat_cluster1"), seeds.seed("model", "fedconcat_cluster2"),
              seeds.seed("selection", "sfl_aux_head")}
    assert len(values) == 6
    assert Seeds(0).seed("model", "sfl_aux_head") == seeds.seed("model", "sfl_aux_head")
    assert Seeds(1).seed("model", "sfl_aux_head") != seeds.seed("model", "sfl_aux_head")
    draws = Seeds(0).numpy("partition").random(3)
    np.testing.assert_array_equal(draws, np.random.default_rng(seeds.seed("partition")).random(3))


def test_an_unknown_stream_is_refused():
    with pytest.raises(KeyError, match="unknown seed stream 'weights'"):
        Seeds(0).seed("weights")

"""Spatially consistent fields (channel.spatial): over the draw of the field the correlation
of two points d apart is exp(-d / d_corr), a field's values are standard normal over space,
a field is a function of the position alone, and the LOS state drawn from one holds its
probability and changes little over short steps."""

import math

import numpy as np
import pytest
from scipy import stats

from channel import spatial


@pytest.mark.parametrize("d_corr", [37.0, 50.0])
def test_the_correlation_at_distance_s_is_exp_of_minus_s_over_d(d_corr):
    """4,000 fields, each at the origin and at s along a random direction: the sample
    correlation within 4 standard errors (sqrt((1 + rho^2) / n)) of exp(-s / d_corr)."""
    rng = np.random.default_rng(0)
    n = 4000
    for s in (0.0, d_corr / 4, d_corr, 2.5 * d_corr):
        products = np.empty(n)
        for i in range(n):
            field = spatial.Field.draw(d_corr, rng, components=64)
            angle = rng.uniform(0, 2 * np.pi)
            both = field(np.array([[0.0, 0.0], [s * math.cos(angle), s * math.sin(angle)]]))
            products[i] = both[0] * both[1]
        expected = math.exp(-s / d_corr)
        assert abs(products.mean() - expected) < 4 * math.sqrt((1 + expected ** 2) / n)


def test_one_fields_values_over_space_are_standard_normal():
    field = spatial.Field.draw(50.0, np.random.default_rng(1))
    points = np.random.default_rng(2).uniform(-50_000, 50_000, (20_000, 2))
    values = field(points)
    assert stats.kstest(values, "norm").statistic < 0.03
    assert abs(values.mean()) < 0.05 and abs(values.std() - 1) < 0.05


def test_a_field_is_a_function_of_the_position_alone():
    """The same stream, the same field; a point asked again (a path that comes back) finds
    its value again; one point asked alone or among others, the same number."""
    first = spatial.Field.draw(50.0, np.random.default_rng(5))
    again = spatial.Field.draw(50.0, np.random.default_rng(5))
    points = np.array([[10.0, 20.0], [400.0, -30.0], [10.0, 20.0]])
    assert first(points).tolist() == again(points).tolist()
    assert first(points)[0] == first(points)[2] == float(first(points[0]))
    assert spatial.shadowing_db(first, 6.0, points).tolist() == (6.0 * first(points)).tolist()
    with pytest.raises(ValueError, match="correlation distance: must be > 0 m, got 0.0"):
        spatial.Field.draw(0.0, np.random.default_rng(0))


def test_the_los_state_holds_its_probability_and_changes_little_a_metre_on():
    """At a LOS probability of 0.3, 30 % of far-apart points are LOS (within 4 standard
    errors); one metre on, the state differs at few points (the field's step of 1 / 50 of
    its correlation distance), where independent draws would differ at 2 x 0.3 x 0.7 = 42 %."""
    field = spatial.Field.draw(50.0, np.random.default_rng(3))
    points = np.random.default_rng(4).uniform(-50_000, 50_000, (20_000, 2))
    los = spatial.los_state(field, np.full(len(points), 0.3), points)
    assert abs(los.mean() - 0.3) < 4 * math.sqrt(0.3 * 0.7 / len(points))
    stepped = spatial.los_state(field, np.full(len(points), 0.3), points + [1.0, 0.0])
    assert (los != stepped).mean() < 0.1


def test_a_field_through_a_drops_value_keeps_it_there_and_the_correlation_elsewhere():
    """Through(field, x0, z0) is z0 at x0, to the bit; over fields and z0 ~ N(0, 1), its
    correlation between two points 30 m apart near x0 (one 20 m from it) is still
    exp(-30 / 50), its variance at each 1, and its correlation with z0 at 20 m exp(-20 / 50)
    (4 standard errors, 4,000 draws)."""
    rng = np.random.default_rng(6)
    origin = np.array([100.0, -20.0])
    here, there = origin + [20.0, 0.0], origin + [20.0, 30.0]
    products, squares, with_value = np.empty(4000), np.empty(4000), np.empty(4000)
    for i in range(4000):
        through = spatial.Through(spatial.Field.draw(50.0, rng, components=64), origin,
                                  float(rng.normal()))
        if i == 0:
            assert float(through(origin)) == through.value
        a, b = through(np.array([here, there]))
        products[i], squares[i], with_value[i] = a * b, a * a, a * through.value
    rho = math.exp(-30 / 50)
    assert abs(products.mean() - rho) < 4 * math.sqrt((1 + rho ** 2) / 4000)
    assert abs(squares.mean() - 1) < 4 * math.sqrt(2 / 4000)
    # and it holds the drop's value as the field would: E[G'(r) z0] = exp(-20 / 50)
    near = math.exp(-20 / 50)
    assert abs(with_value.mean() - near) < 4 * math.sqrt((1 + near ** 2) / 4000)

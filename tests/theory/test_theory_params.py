"""ModelParams validation: every bad input raises ValueError naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.theory.params import ModelParams, parse_matrix


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(L=1), "L"),
        (dict(L=0), "L"),
        (dict(L=2.5), "L"),
        (dict(L=True), "L"),
        (dict(omega=-0.1), "omega"),
        (dict(omega=1.5), "omega"),
        (dict(omega=float("nan")), "omega"),
        (dict(A=((0.6, 0.4, 0.0), (0.4, 0.6, 0.0))), "A"),  # not L x L
        (dict(A=((0.5, 0.4), (0.4, 0.6))), "A"),  # row does not sum to 1
        (dict(A=((1.2, -0.2), (0.4, 0.6))), "A"),  # negative entry
        (dict(sigma=0.0), "sigma"),
        (dict(sigma=(0.5, -0.5)), "sigma"),
        (dict(sigma=(0.5, 0.5, 0.5)), "sigma"),
        (dict(lam=-0.01), "lam"),
        (dict(P=((1.0, 0.5), (0.0, 1.0))), "P"),  # not symmetric
        (dict(P=((1.0, 2.0), (2.0, 1.0))), "P"),  # not PSD
        (dict(P=((1.0,),)), "P"),  # not L x L
        (dict(rho0=0.0), "rho0"),
        (dict(r=0), "r"),
    ],
)
def test_bad_input_raises_naming_the_parameter(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError) as err:
        ModelParams(**kwargs)
    assert str(err.value).split()[0] == name


def test_defaults_and_views() -> None:
    p = ModelParams()
    assert p.L == 2 and p.sigma == (0.5, 0.5) and p.omega == 0.3 and p.lam == 0.01
    np.testing.assert_array_equal(p.P_array, [[1, -1], [-1, 1]])
    np.testing.assert_array_equal(p.sigma2, [0.25, 0.25])
    p3 = ModelParams(L=3)
    np.testing.assert_allclose(p3.A_array.sum(axis=1), 1.0)
    assert p.replace(omega=0.5).omega == 0.5
    with pytest.raises(ValueError, match="omega"):
        p.replace(omega=2.0)
    assert parse_matrix("0.6,0.4;0.4,0.6") == ((0.6, 0.4), (0.4, 0.6))
    with pytest.raises(ValueError, match="unequal"):
        parse_matrix("1,2;3")


def test_sigma_value_is_one_number_only_when_every_token_has_it() -> None:
    from attnphase.theory.params import ModelParams

    assert ModelParams(sigma=(0.5, 0.5)).sigma_value == 0.5
    assert ModelParams(sigma=(0.4, 0.6)).sigma_value == [0.4, 0.6]


def test_sigma_as_numpy_numbers_is_the_number_it_holds() -> None:
    """ModelParams(sigma=np.array(0.5)) raised TypeError: iteration over a 0-d array (np.float64(0.5) worked)."""
    assert ModelParams(sigma=np.array(0.5)).sigma == ModelParams(sigma=np.float32(0.5)).sigma == (0.5, 0.5)
    assert ModelParams(sigma=np.array([0.5, 0.4])).sigma == (0.5, 0.4)
    with pytest.raises(ValueError, match="sigma must be a number"):
        ModelParams(sigma=np.array("x"))


def test_replace_L_takes_the_new_Ls_defaults_where_the_old_were_defaults() -> None:
    p3 = ModelParams().replace(L=3)
    assert p3 == ModelParams(L=3)
    assert p3.replace(L=2) == ModelParams()
    assert ModelParams(sigma=0.7, lam=0.1).replace(L=4) == ModelParams(L=4, sigma=0.7, lam=0.1)


@pytest.mark.parametrize("kwargs", [dict(sigma=(0.4, 0.6)), dict(A=((0.5, 0.5), (0.5, 0.5))),
                                    dict(P=((1.0, 0.0), (0.0, 1.0))), dict(C=((1.0, 0.2), (0.2, 1.0)))])
def test_replace_L_refuses_a_field_set_for_the_old_L(kwargs: dict) -> None:
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{name} was set for L = 2.*give {name} for L = 3"):
        ModelParams(**kwargs).replace(L=3)
    assert ModelParams(**kwargs).replace(L=3, **{name: None}).L == 3


def test_replace_with_a_new_token_covariance_takes_its_sigma() -> None:
    p = ModelParams().replace(C=((1.0, 0.2), (0.2, 1.0)))
    assert p.sigma == (1.0, 1.0)
    q = ModelParams(C=((4.0, 0.0), (0.0, 1.0))).replace(L=3, C=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    assert q.sigma == (1.0, 1.0, 1.0)


def test_parse_matrix_refuses_what_is_no_matrix_of_finite_numbers() -> None:
    """parse_matrix(5) raised AttributeError ('int' has no 'strip') and parse_matrix("nan,1;1,nan") returned NaNs."""
    with pytest.raises(TypeError, match="text"):
        parse_matrix(5)  # type: ignore[arg-type]
    for text in ("nan,1;1,nan", "inf,0;0,1"):
        with pytest.raises(ValueError, match="finite"):
            parse_matrix(text)

"""Every calibrator of calib's registry as a scikit-learn estimator: the same fit as `calib
fit`, applied as `calib apply`, saved and loaded both ways, pickled, cloned, tuned."""

import json
import pickle
import subprocess

import numpy as np
import pytest

import calib
from conftest import DATA, load, softmax

METHODS = sorted(calib.ESTIMATORS)
DUMP = DATA / "densenet40_cifar10.npz"


def options_for(method):
    """Options that keep the slow methods quick in a debug build (and exercise options)."""
    return {"top-label": {"base": "histogram", "bins": 10}, "histogram": {"bins": 10}}.get(method, {})


@pytest.fixture(scope="module")
def dump():
    return load("densenet40_cifar10")


@pytest.mark.parametrize("method", METHODS)
def test_fit_equals_calib_fit_and_round_trips(cli, tmp_path, dump, method):
    vz, vy, tz, _ = dump
    est = calib.ESTIMATORS[method](**options_for(method))
    assert est.fit(vz, vy) is est
    assert est.record_["n_samples"] == len(vy)
    words = est._option_words()
    path = tmp_path / "cli.json"
    subprocess.run([cli, "--quiet", "fit", method, str(DUMP), "-o", str(path), *words], check=True,
                   capture_output=True)
    theirs = json.loads(path.read_text())
    ours = json.loads(est.calibrator_.to_json())
    assert ours["parameters"] == theirs["parameters"]
    assert ours["settings"] == theirs["settings"]
    probs = est.predict_proba(tz)
    assert probs.shape == (len(tz), 10) and probs.dtype == np.float64
    assert np.allclose(probs.sum(axis=1), 1.0)
    # Saved by Python, applied by the command line.
    saved = tmp_path / "py.json"
    est.save(saved)
    out = tmp_path / "applied.npz"
    subprocess.run([cli, "--quiet", "apply", str(saved), str(DUMP), "--split", "test", "-o", str(out)],
                   check=True, capture_output=True)
    # The command line writes the input's float type (float32 here), rounded from the same f64.
    assert np.array_equal(np.load(out)["probs"], probs.astype(np.float32))
    # Saved by the command line, loaded by Python; pickled.
    loaded = calib.load(path)
    # A method that fits another's calibrator (ece-temperature: a temperature) loads as that.
    assert loaded.method == theirs["method"] == ours["method"]
    assert type(loaded) is calib.ESTIMATORS[theirs["method"]]
    assert np.array_equal(loaded.predict_proba(tz), probs)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict_proba(tz), probs)
    assert again.get_params() == est.get_params()


def test_temperature_scaling_contract(dump):
    vz, vy, tz, ty = dump
    t = calib.TemperatureScaling().fit(vz, vy)
    assert t.temperature_ == pytest.approx(np.exp(t.parameters_["log_temperature"][0]))
    assert t.record_["converged"] and t.record_["stop_reason"] == "gradient"
    assert t.n_iter_ == t.record_["iterations"]
    p = t.predict_proba(tz)
    assert np.allclose(p, softmax(tz / t.temperature_), atol=1e-12)
    assert np.array_equal(t.predict(tz), p.argmax(axis=1))
    assert calib.ece(p, ty) < calib.ece(tz, ty)
    # The same fit from probabilities (log-probabilities are logits up to a row constant).
    with pytest.warns(calib.CalibWarning, match="taken as 1e-30 before the logarithm"):
        from_probs = calib.TemperatureScaling().fit(softmax(vz), vy)
    assert from_probs.temperature_ == pytest.approx(t.temperature_, rel=1e-6)


def test_binary_maps_take_binary_scores(dump):
    vz, vy, tz, ty = dump
    p, t = softmax(vz)[:, 3], (vy == 3).astype(int)
    for cls in (calib.IsotonicRegression, calib.PlattScaling, calib.BetaCalibration, calib.CentredIsotonicRegression):
        est = cls().fit(p, t)
        out = est.predict_proba(softmax(tz)[:, 3])
        assert out.shape == (len(tz), 2) and np.allclose(out.sum(axis=1), 1)
        assert list(est.classes_) == [0, 1]


def test_options_are_the_methods_own(dump):
    assert "bins" in calib.HistogramBinning().get_params()
    assert "bins" not in calib.IsotonicRegression().get_params()
    assert set(calib.AffineLogitScaling().get_params()) == {"ridge", "input"}
    assert "lam" in calib.MatrixScaling().get_params()
    assert "base" in calib.TopLabelCalibration().get_params()
    with pytest.raises(ValueError, match="bins"):
        calib.HistogramBinning(bins="many").fit(*dump[:2])
    h = calib.HistogramBinning(bins=5).fit(*dump[:2])
    assert h.parameters_["0.counts"].size == 5 if "0.counts" in h.parameters_ else True


def test_sample_weights_equal_repeated_rows(dump):
    vz, vy, tz, _ = dump
    vz, vy = vz[:1500], vy[:1500]
    w = np.random.default_rng(1).integers(0, 3, size=len(vy))
    rows = np.repeat(np.arange(len(vy)), w)
    for cls in (calib.TemperatureScaling, calib.IsotonicRegression):
        a = cls().fit(vz, vy, sample_weight=w).predict_proba(tz)
        b = cls().fit(vz[rows], vy[rows]).predict_proba(tz)
        assert np.allclose(a, b, atol=1e-8), cls.__name__


def test_clone_set_params_and_grid_search(dump):
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn not installed: not checked")
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import GridSearchCV

    vz, vy, _, _ = dump
    h = calib.HistogramBinning(bins=7)
    c = clone(h)
    assert c.get_params() == h.get_params() and c is not h
    assert is_classifier(h)
    assert h.set_params(bins=9).bins == 9
    search = GridSearchCV(calib.HistogramBinning(), {"bins": [5, 10, 20]}, cv=3, scoring="neg_log_loss")
    search.fit(vz[:3000], vy[:3000])
    assert search.best_params_["bins"] in (5, 10, 20)
    assert sklearn.__version__


def test_not_fitted_and_mismatched_columns(dump):
    vz, vy, _, _ = dump
    with pytest.raises(Exception, match="not fitted"):
        calib.TemperatureScaling().predict_proba(vz)
    t = calib.TemperatureScaling().fit(vz, vy)
    with pytest.raises(ValueError, match="expecting 10 features"):
        t.predict_proba(vz[:, :5])


def test_evaluate_equals_calib_eval_with_the_calibrator(cli, tmp_path, dump):
    vz, vy, tz, ty = dump
    for est in (calib.TopLabelCalibration(base="histogram", bins=10), calib.TemperatureScaling()):
        est.fit(vz, vy)
        path = tmp_path / "c.json"
        est.save(path)
        out = subprocess.run([cli, "--quiet", "eval", str(DUMP), "--calibrator", str(path), "--format", "json"],
                             check=True, capture_output=True, text=True).stdout
        theirs = json.loads(out)["metrics"]
        ours = est.evaluate(tz, ty)
        assert set(ours) == set(theirs)
        for k in theirs:
            if theirs[k] is None:  # JSON has no NaN or infinity: null (a zero probability: NLL inf)
                assert not np.isfinite(ours[k]), (est.method, k)
            else:
                assert ours[k] == pytest.approx(theirs[k], rel=1e-12, abs=1e-15), (est.method, k)
    top = calib.TopLabelCalibration(base="isotonic").fit(vz, vy)
    pred, confidence = top.predict_top_label(tz)
    assert np.array_equal(pred, tz.argmax(axis=1)) and np.all((0 <= confidence) & (confidence <= 1))
    # The top-label ECE from the calibrated confidences, not from the renormalised rows.
    conf_ece = top.evaluate(tz, ty, ["ece"])["ece"]
    assert conf_ece != calib.ece(top.predict_proba(tz), ty)
    assert calib.TemperatureScaling().fit(vz, vy).predict_top_label(tz) is None

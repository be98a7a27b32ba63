//! `calib apply`: calibrated probabilities (and logits) of one split, as `.npy` or `.npz`.
//!
//! A `.npz` holds `probs`, `logits` (scaling-family methods), `labels`, and for top-label
//! calibrators `pred` (the model's argmax, unchanged) and `confidence` (its calibrated
//! probability). A top-label calibrator's `probs` floor the confidence at 1/K (no probability
//! vector has a smaller largest entry) and keep `pred` the strict argmax in f64 only: where
//! the confidence is below 1/K the rows are near-uniform, and float32 rounding ties them.
//! `pred` and `confidence` are what such a calibrator says; read the prediction from them.

use calib_core::input::ScoreKind;
use calib_train::TopLabelPrediction;

use super::context::{Context, load_calibrator};
use crate::cli::{ApplyArgs, DtypeArg};
use crate::error::{CliError, Result};
use crate::io::{Dataset, OutArray, OutValues, Scores, write_arrays};
use crate::probabilities::softmax_rows;

pub(super) fn run(args: &ApplyArgs, ctx: &Context) -> Result<()> {
    let ext = args.output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("npy" | "npz")) {
        return Err(CliError::output(args.output.display(), "the output must end in .npy or .npz"));
    }
    if args.data.spec().has_weights() {
        return Err(CliError::Usage(
            "calib apply maps each row on its own: sample weights change nothing; drop them".into(),
        ));
    }
    let calibrator = load_calibrator(&args.params, &ctx.device)?;
    let mut data = Dataset::load(&args.data.spec(), "test")?;
    // The binary maps read probabilities as given; the scaling family needs log-probabilities.
    if !calibrator.method().is_binary_map() {
        data = data.into_logits()?;
    }
    data.warnings.iter().for_each(|w| ctx.warn(w));
    // The input's float type unless --dtype says otherwise.
    let f64_out = match args.dtype {
        Some(DtypeArg::F64) => true,
        Some(DtypeArg::F32) => false,
        None => matches!(data.scores, Scores::F64(_)),
    };
    let as_scores = |v: Vec<f64>| match f64_out {
        true => Scores::F64(v),
        false => Scores::F32(v.into_iter().map(|x| x as f32).collect()),
    };
    let preds = data.take_predictions(&ctx.device)?;
    let train = |e| CliError::train(&data.origin, e);
    let (calibrated, top) = calibrator.calibrate_with_top_label(&preds).map_err(train)?;
    let (values, labels) = calibrated.host_rows().map_err(|e| CliError::core(&data.origin, e))?;
    let values: Vec<f64> = values.into_f64();
    let (n, c) = (calibrated.n_samples(), calibrated.n_columns());
    let float = |name: &str, shape: Vec<usize>, v: Vec<f64>| OutArray {
        name: name.into(),
        shape,
        values: OutValues::Float(as_scores(v)),
    };
    let mut arrays = Vec::new();
    match calibrated.kind() {
        ScoreKind::Logits => {
            arrays.push(float("probs", vec![n, c], softmax_rows(&values, c)));
            arrays.push(float("logits", vec![n, c], values));
        }
        _ => arrays.push(float("probs", if c == 1 { vec![n] } else { vec![n, c] }, values)),
    }
    if let Some(TopLabelPrediction { pred, confidence, .. }) = top {
        if ext.as_deref() == Some("npy") {
            ctx.warn(
                "a .npy holds the probabilities only; write a .npz for the top-label \
                 calibrator's `pred` and `confidence`",
            );
        }
        arrays.push(OutArray { name: "pred".into(), shape: vec![n], values: OutValues::Int(pred) });
        arrays.push(float("confidence", vec![n], confidence));
    }
    arrays.push(OutArray {
        name: "labels".into(),
        shape: vec![n],
        values: OutValues::Int(labels.into_owned()),
    });
    write_arrays(&args.output, &arrays)?;
    ctx.note(&format!(
        "{} applied to {} ({n} rows) -> {}",
        calibrator.method(),
        data.origin,
        args.output.display()
    ));
    Ok(())
}

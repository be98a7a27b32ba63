//! `calib apply`: calibrated probabilities (and logits) of one split, as `.npy` or `.npz`.

use calib_core::input::{HostValues, ScoreKind};

use super::{Context, load_calibrator};
use crate::cli::ApplyArgs;
use crate::error::{CliError, Result};
use crate::io::{Dataset, OutArray, OutValues, Scores, write_arrays};

pub(super) fn run(args: &ApplyArgs, ctx: &Context) -> Result<()> {
    let ext = args.output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("npy" | "npz")) {
        return Err(CliError::output(args.output.display(), "the output must end in .npy or .npz"));
    }
    let calibrator = load_calibrator(&args.params, &ctx.device)?;
    let mut data = Dataset::load(&args.data.spec(), "test")?;
    // The binary maps read probabilities as given; the scaling family needs log-probabilities.
    if !calibrator.method().is_binary_map() {
        data = data.into_logits()?;
    }
    data.warnings.iter().for_each(|w| ctx.warn(w));
    let preds = data.take_predictions(&ctx.device)?;
    let calibrated = calibrator.calibrate(&preds).map_err(|e| CliError::train(&data.origin, e))?;
    let (values, labels) = calibrated.host_rows().map_err(|e| CliError::core(&data.origin, e))?;
    let values: Vec<f64> = match values {
        HostValues::F64(v) => v.into_owned(),
        HostValues::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
    };
    let (n, c) = (calibrated.n_samples(), calibrated.n_columns());
    // Keep the input's precision.
    let as_scores = |v: Vec<f64>| match data.scores {
        Scores::F32(_) => Scores::F32(v.into_iter().map(|x| x as f32).collect()),
        Scores::F64(_) => Scores::F64(v),
    };
    let mut arrays = Vec::new();
    match calibrated.kind() {
        ScoreKind::Logits => {
            let probs = softmax_rows(&values, c);
            arrays.push(OutArray {
                name: "probs".into(),
                shape: vec![n, c],
                values: OutValues::Float(as_scores(probs)),
            });
            arrays.push(OutArray {
                name: "logits".into(),
                shape: vec![n, c],
                values: OutValues::Float(as_scores(values)),
            });
        }
        _ => {
            let shape = if c == 1 { vec![n] } else { vec![n, c] };
            arrays.push(OutArray {
                name: "probs".into(),
                shape,
                values: OutValues::Float(as_scores(values)),
            });
        }
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

/// Row-wise softmax by max-subtraction, in f64.
fn softmax_rows(logits: &[f64], k: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(logits.len());
    for row in logits.chunks_exact(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = row.iter().map(|z| (z - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        out.extend(exps.into_iter().map(|e| e / sum));
    }
    out
}

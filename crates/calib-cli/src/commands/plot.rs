//! `calib plot`: a reliability diagram of one split, optionally after a fitted calibrator.

use calib_core::curve::{BandwidthRule, Kernel, Scale};
use calib_core::stats::AccuracyInterval;

use super::context::{Context, load_calibrator};
use crate::cli::{BandwidthRuleArg, PlotArgs, ScaleArg};
use crate::error::plain;
use crate::error::{CliError, Result};
use crate::io::Dataset;
use crate::plot::{
    CurveOptions, CurveOverlay, DiagramConfig, DiagramScores, ReliabilityDiagram, render,
};

pub(super) fn run(args: &PlotArgs, ctx: &Context) -> Result<()> {
    let mut data = Dataset::load(&args.data.spec(), "test")?;
    let calibrator =
        args.calibrator.as_deref().map(|p| load_calibrator(p, &ctx.device)).transpose()?;
    if calibrator.as_ref().is_some_and(|c| !c.method().is_binary_map()) {
        data = data.into_logits()?;
    }
    data.warnings.iter().for_each(|w| ctx.warn(w));
    let mut preds = data.take_predictions(&ctx.device)?;
    let mut what = String::from("uncalibrated");
    if let (Some(calibrator), Some(path)) = (&calibrator, &args.calibrator) {
        what = format!("after {}", calibrator.method());
        let train = |e| CliError::train(path.display(), e);
        // A top-label calibrator's top-label diagram reads its predictions and confidences
        // (crate::top_label); its probabilities floor the confidence at 1/K.
        preds = match calibrator.calibrate_with_top_label(&preds).map_err(train)? {
            (_, Some(top)) if args.class.is_none() => {
                let view = top.as_predictions(&ctx.device).map_err(train)?;
                view.with_weights_of(&preds).map_err(|e| CliError::core(&data.origin, e))?
            }
            (calibrated, _) => calibrated,
        };
    }
    if !(args.level > 0.0 && args.level < 1.0) {
        return Err(CliError::Usage(format!("--level {} is outside (0, 1)", args.level)));
    }
    let accuracy_interval = args
        .interval
        .as_deref()
        .map(AccuracyInterval::from_name)
        .transpose()
        .map_err(|e| CliError::Usage(plain(e)))?;
    let config = DiagramConfig {
        scores: args.class.map_or(DiagramScores::TopLabel, DiagramScores::Class),
        n_bins: args.bins,
        adaptive: args.adaptive,
        edges: args.edges.clone(),
        alpha: 1.0 - args.level,
        accuracy_interval,
    };
    let mut diagram = ReliabilityDiagram::compute(&preds, &config)?;
    if args.curve {
        let options = CurveOptions {
            kernel: Kernel::from_name(&args.kernel).map_err(|e| CliError::Usage(plain(e)))?,
            bandwidth: args.bandwidth,
            bandwidth_rule: match args.bandwidth_rule {
                BandwidthRuleArg::Loo => BandwidthRule::LeaveOneOut,
                BandwidthRuleArg::Silverman => BandwidthRule::Silverman,
            },
            scale: match args.scale {
                ScaleArg::Logit => Scale::Logit,
                ScaleArg::Probability => Scale::Probability,
            },
            replicates: args.bootstrap,
            seed: args.seed,
            level: args.level,
        };
        let overlay = CurveOverlay::compute(&preds, config.scores, &options)?;
        let h = overlay.curve.bandwidth;
        let silverman = args.bandwidth_rule == BandwidthRuleArg::Silverman;
        if args.bandwidth.is_none() && silverman && args.scale == ScaleArg::Probability && h < 1e-3
        {
            ctx.warn(&format!(
                "Silverman's rule gives the curve a bandwidth of {h:.2e}: the scores crowd \
                 (their interquartile range is tiny), so the curve follows single scores; \
                 --bandwidth-rule loo --scale logit (or --bandwidth) smooths it"
            ));
        }
        diagram.curve = Some(overlay);
    }
    let file = args
        .data
        .data
        .file_name()
        .map_or_else(|| data.origin.clone(), |f| f.to_string_lossy().into_owned());
    let split = data.split.as_deref().map(|s| format!(" [{s}]")).unwrap_or_default();
    let class = args.class.map(|k| format!(", class {k}")).unwrap_or_default();
    let title = format!(
        "{file}{split}{class}, {what}: ECE = {:.4} ({})",
        diagram.calibration_error, diagram.binning
    );
    render(&diagram, &title, &args.output)?;
    ctx.note(&format!("{title} -> {}", args.output.display()));
    Ok(())
}

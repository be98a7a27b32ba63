//! The rows an evaluation measures: the data after a saved calibrator, and the rule that keeps
//! top-label calibrators away from evaluation states.

use calib_core::input::Predictions;
use calib_train::{AnyCalibrator, TopLabelPrediction};

use crate::cli::EvalArgs;
use crate::commands::context::Context;
use crate::error::{CliError, Result};
use crate::io::Dataset;

/// `args`' data read whole (its warnings printed), its predictions after `calibrator`, and a
/// top-label calibrator's predictions and confidences.
pub(super) fn load_calibrated(
    args: &EvalArgs,
    calibrator: Option<&AnyCalibrator>,
    ctx: &Context,
) -> Result<(Dataset, Predictions, Option<TopLabelPrediction>)> {
    let mut data = Dataset::load(&args.data.spec(), "test")?;
    if calibrator.is_some_and(|c| !c.method().is_binary_map()) {
        data = data.into_logits()?;
    }
    data.warnings.iter().for_each(|w| ctx.warn(w));
    let mut preds = data.take_predictions(&ctx.device)?;
    let mut top = None;
    if let (Some(c), Some(path)) = (calibrator, &args.calibrator) {
        (preds, top) =
            c.calibrate_with_top_label(&preds).map_err(|e| CliError::train(path.display(), e))?;
    }
    Ok((data, preds, top))
}

/// Refuses a top-label calibrator where rows pass through evaluation states (chunks, saved
/// and resumed states): it is measured from its predictions and confidences, which a state
/// does not hold.
pub(super) fn check_streamable(calibrator: Option<&AnyCalibrator>) -> Result<()> {
    if calibrator.is_some_and(AnyCalibrator::is_top_label) {
        return Err(CliError::Usage(
            "a top-label calibrator is measured from its predictions and confidences, which \
             evaluation states do not hold: evaluate the file whole (no --chunk-rows, \
             --save-state or --resume)"
                .into(),
        ));
    }
    Ok(())
}

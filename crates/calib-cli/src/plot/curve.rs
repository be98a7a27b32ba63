//! [`CurveOverlay`]: the continuous reliability curve (and its bootstrap band) drawn over a
//! reliability diagram, from calib-core's kernel estimator on the diagram's own scores.

use calib_core::bootstrap::BootstrapConfig;
use calib_core::curve::{
    BandwidthRule, CurveBand, Kernel, ReliabilityCurve, ReliabilityCurveConfig, Scale,
};
use calib_core::input::Predictions;
use calib_core::pairs::{PairSet, ScorePairs};

use super::scores::{DiagramScores, format_percent};
use crate::error::plain;
use crate::error::{CliError, Result};

/// How to estimate the overlaid curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveOptions {
    /// The kernel.
    pub kernel: Kernel,
    /// The bandwidth (default: Silverman's rule).
    pub bandwidth: Option<f64>,
    /// How the bandwidth is chosen when none is given.
    pub bandwidth_rule: BandwidthRule,
    /// Where the kernel smooths.
    pub scale: Scale,
    /// Bootstrap replicates of the band (none: no band).
    pub replicates: Option<usize>,
    /// Seed of the band's resampling.
    pub seed: u64,
    /// Coverage of the band.
    pub level: f64,
}

/// The curve, its band and their legends.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveOverlay {
    /// `RC` on the grid.
    pub curve: ReliabilityCurve,
    /// Pointwise bootstrap quantiles, when asked for.
    pub band: Option<CurveBand>,
    /// `lce_ece` of the same scores.
    pub lce_ece: f64,
    /// Legend of the curve (kernel and bandwidth).
    pub label: String,
    /// Legend of the band (level and replicates).
    pub band_label: Option<String>,
}

impl CurveOverlay {
    /// The curve of the diagram's scores (`scores`) of `preds`.
    ///
    /// # Errors
    /// [`CliError::Usage`] for a bad bandwidth, replicate count or level, or constant scores
    /// without a bandwidth; [`CliError::Core`] when the scores cannot be read.
    pub fn compute(
        preds: &Predictions,
        scores: DiagramScores,
        options: &CurveOptions,
    ) -> Result<Self> {
        let set = match scores {
            DiagramScores::TopLabel => PairSet::TopLabel,
            DiagramScores::Class(k) => PairSet::Class(k),
        };
        let pairs =
            ScorePairs::of(preds, set).map_err(|e| CliError::core("reliability curve", e))?;
        // Weighted rows: the weighted curve (kernel sums, bandwidth rule, bootstrap draws).
        let weights = preds.weights().map(|w| w.values());
        let config = ReliabilityCurveConfig::new()
            .with_kernel(options.kernel)
            .with_bandwidth(options.bandwidth)
            .with_bandwidth_rule(options.bandwidth_rule)
            .with_scale(options.scale);
        let usage = |e: calib_core::CalibError| CliError::Usage(plain(e));
        let (curve, band) = match options.replicates {
            Some(b) => {
                let boot = BootstrapConfig::new()
                    .with_replicates(b)
                    .with_seed(options.seed)
                    .with_level(options.level);
                let (curve, band) = config.band_weighted(&pairs, weights, &boot).map_err(usage)?;
                (curve, Some(band))
            }
            None => (config.curve_weighted(&pairs, weights).map_err(usage)?, None),
        };
        let lce_ece =
            config.with_bandwidth(Some(curve.bandwidth)).lce_ece_weighted(&pairs, weights);
        let lce_ece = lce_ece.map_err(usage)?;
        let kernel = match curve.kernel {
            Kernel::Triweight => "triweight",
            _ => "Gaussian",
        };
        let h = match curve.bandwidth {
            h if h < 1e-3 => format!("{h:.1e}"),
            h => format!("{h:.3}"),
        };
        let label = format!("reliability curve ({kernel}, h = {h}; LCE-ECE {lce_ece:.4})");
        let band_label = band.as_ref().map(|b| {
            format!("{} bootstrap band ({} replicates)", format_percent(b.level), b.replicates)
        });
        Ok(Self { curve, band, lce_ece, label, band_label })
    }
}

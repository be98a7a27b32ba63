//! [`DeviceFit`]: what a binary map's fit on the device returns, before the degenerate
//! problems' rule and the record.

/// Every problem's map fitted on the device ([`super::BinaryFit::fit_sorted`] on pairs sorted
/// there, or [`super::BinaryFit::device_logistic`]'s Newton on sums from there).
#[derive(Debug, Clone)]
pub struct DeviceFit<M> {
    /// Per problem, its map.
    pub maps: Vec<M>,
    /// Per problem, its positive outcomes (a problem with none, or with only positives, keeps
    /// the identity).
    pub positives: Vec<usize>,
    /// The mean NLL of the rows at their labels through the maps (f32), where the fit has it;
    /// `None`: the maps' device tables ([`super::BinaryMap::device_table`], which every map
    /// of such a fit has) give it, applied to the rows on the device.
    pub nll: Option<f64>,
    /// Iterations of an iterative fit (0 for the sorts and scans).
    pub iterations: usize,
    /// False when an iterative fit stopped short of an optimum.
    pub converged: bool,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

impl<M> DeviceFit<M> {
    /// A closed-form fit's maps with each problem's positives and, where the fit has it,
    /// the training NLL.
    pub fn exact(maps: Vec<M>, positives: Vec<usize>, nll: Option<f64>) -> Self {
        Self { maps, positives, nll, iterations: 0, converged: true, warnings: Vec::new() }
    }
}

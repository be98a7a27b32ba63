//! Reliability diagrams: the data ([`ReliabilityDiagram`], from calib-core's bin statistics)
//! and its picture ([`render`]).

mod binomial;
mod curve;
mod diagram;
mod heatmap;
mod render;
mod scores;
mod winrates;

pub use binomial::acceptance_interval;
pub use curve::{CurveOptions, CurveOverlay};
pub use diagram::{DiagramBin, DiagramConfig, ReliabilityDiagram};
pub use heatmap::render_heatmap;
pub use render::{SIZE, render};
pub use scores::DiagramScores;
pub use winrates::render_win_rates;

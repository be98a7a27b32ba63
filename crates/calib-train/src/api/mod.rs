//! The face of every calibration method, in layers over `methods/` (each file imports only the
//! ones above it in this list):
//! - `registry.rs`: the one list of methods, handed to the macros that generate the rest;
//! - [`Method`]: their names and codes;
//! - [`SavedTensor`], [`SavedSettings`]: a saved parameter, and the typed choices saved
//!   beside the parameters;
//! - [`Calibrator`], [`Fitted`]: what a fitted method does (and applying it in row chunks);
//! - [`Fit`]: how a method's settings fit it;
//! - [`SavedCalibrator`]: the JSON form;
//! - [`AnyCalibrator`], [`FitAny`]: any method chosen at run time, above `methods/`.

mod any;
mod calibrator;
mod fit;
mod method;
mod registry;
mod saved;
mod settings;
mod tensor;

pub use crate::fit::SampleWeighting;
pub use any::{AnyCalibrator, FitAny};
pub use calibrator::{Calibrator, Fitted};
pub use fit::Fit;
pub use method::Method;
pub use saved::{FORMAT, SavedCalibrator};
pub use settings::SavedSettings;
pub use tensor::SavedTensor;

//! [`MethodOptions`]: a method's command-line options, which build its settings.

use calib_train::{FitAny, Reduction};

use crate::error::Result;

/// What the data says about the fit: binary scores or K classes, and how a binary map covers
/// K classes (`calib fit` fits one-vs-rest; `calib compare --reduction` chooses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitInput {
    /// Binary scores (one column).
    pub binary: bool,
    /// How a binary map covers K classes.
    pub reduction: Reduction,
}

/// A method's options (clap `Args`), each type owned by one method of the registry.
pub trait MethodOptions: std::fmt::Debug {
    /// The settings that fit the method on `input`.
    ///
    /// # Errors
    /// [`crate::CliError::Usage`] for options that make no sense together.
    fn config(&self, input: FitInput) -> Result<Box<dyn FitAny>>;

    /// One line saying what the method is (`calib fit --help`).
    fn about() -> &'static str
    where
        Self: Sized;
}

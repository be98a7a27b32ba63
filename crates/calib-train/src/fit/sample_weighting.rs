//! [`SampleWeighting`]: how a fit takes sample weights.

/// How a method takes the sample weights of [`calib_core::input::Predictions::with_weights`]
/// (docs/conventions.md, "Sample weights").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleWeighting {
    /// The fit weighs each row's term of its objective (or its sums, or its pooled means):
    /// any non-negative weights.
    Weighted,
    /// The fit runs on the repeated rows that whole-number weights stand for (the same fit,
    /// by definition); weights with fractions are an error that names the method.
    Repeated,
}

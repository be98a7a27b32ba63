//! The serialised forms of an [`EvaluationState`]: JSON, and a compact binary form (a magic
//! number, then postcard); both carry the format version and refuse another.

use super::state::{EvaluationState, FORMAT};
use crate::error::{CalibError, Result};

/// Leading bytes of the binary form.
const MAGIC: &[u8; 8] = b"CALIBST\x01";

impl EvaluationState {
    /// The state as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a state serialises")
    }

    /// A state from [`to_json`](Self::to_json)'s text.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for text that is not a state of this version.
    pub fn from_json(text: &str) -> Result<Self> {
        let state: Self = serde_json::from_str(text)
            .map_err(|e| CalibError::InvalidConfig(format!("not an evaluation state: {e}")))?;
        state.checked()
    }

    /// The state in a compact binary form (a magic number, then postcard).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(postcard::to_stdvec(self).expect("a state serialises"));
        out
    }

    /// A state from [`to_bytes`](Self::to_bytes)' bytes.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for bytes that are not a state of this version.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let body = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
            CalibError::InvalidConfig("not a binary evaluation state (bad magic number)".into())
        })?;
        // The version leads, so a state of another version is named as such, not as garbage.
        if let Ok((format, _)) = postcard::take_from_bytes::<u32>(body) {
            check_format(format)?;
        }
        let state: Self = postcard::from_bytes(body)
            .map_err(|e| CalibError::InvalidConfig(format!("not an evaluation state: {e}")))?;
        state.checked()
    }

    fn checked(self) -> Result<Self> {
        check_format(self.format)?;
        self.config.validate()?;
        Ok(self)
    }
}

fn check_format(format: u32) -> Result<()> {
    if format == FORMAT {
        return Ok(());
    }
    Err(CalibError::InvalidConfig(format!(
        "evaluation state of format {format}, this calib reads format {FORMAT}"
    )))
}

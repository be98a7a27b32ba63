//! Evaluation states on disk: JSON for `.json` paths, else calib-core's compact binary form;
//! read back by content (the binary form starts with a magic number).

use std::path::Path;

use calib_core::EvaluationState;

use super::write_file;
use crate::error::{CliError, Result};

/// Writes `state` to `path` atomically.
pub fn write_state(path: &Path, state: &EvaluationState) -> Result<()> {
    let json =
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let bytes = if json { (state.to_json() + "\n").into_bytes() } else { state.to_bytes() };
    Ok(write_file(path, &bytes)?)
}

/// Reads a state written by [`write_state`].
pub fn read_state(path: &Path) -> Result<EvaluationState> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| CliError::input(&origin, e.to_string()))?;
    let state = if bytes.starts_with(b"CALIBST") {
        EvaluationState::from_bytes(&bytes)
    } else {
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            CliError::input(
                &origin,
                "not an evaluation state (neither JSON nor calib's binary form)",
            )
        })?;
        EvaluationState::from_json(text)
    };
    state.map_err(|e| CliError::input(&origin, crate::error::plain(e)))
}

//! The serialised forms of an [`EvaluationState`]: JSON, and a compact binary form (a magic
//! number, then postcard); both carry the format version and refuse another, and a checksum
//! of the content (64-bit FNV-1a of the state's postcard bytes) that a damaged or edited state
//! fails: a merge never silently takes a shard whose numbers changed on the way.

use serde::{Deserialize, Serialize};

use super::state::{EvaluationState, FORMAT};
use crate::error::{CalibError, Result};

/// Leading bytes of the binary form.
const MAGIC: &[u8; 8] = b"CALIBST\x01";

/// The JSON form as written: the version, the checksum, the state.
#[derive(Serialize)]
struct Sealed<'a> {
    format: u32,
    checksum: String,
    state: &'a EvaluationState,
}

/// The JSON form as read.
#[derive(Deserialize)]
struct Opened {
    format: u32,
    checksum: String,
    state: EvaluationState,
}

/// The version alone, read first so that another version is named as such.
#[derive(Deserialize)]
struct Version {
    format: u32,
}

impl EvaluationState {
    /// The state as JSON: `{"format": F, "checksum": "<16 hex digits>", "state": {...}}`.
    pub fn to_json(&self) -> String {
        let checksum = format!("{:016x}", self.checksum());
        let sealed = Sealed { format: FORMAT, checksum, state: self };
        serde_json::to_string(&sealed).expect("a state serialises")
    }

    /// A state from [`to_json`](Self::to_json)'s text.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for text that is not a state of this version, or whose
    /// checksum does not match its content.
    pub fn from_json(text: &str) -> Result<Self> {
        let bad = |e: serde_json::Error| {
            CalibError::InvalidConfig(format!("not an evaluation state: {e}"))
        };
        let opened: Opened = serde_json::from_str(text).map_err(|e| {
            // Another version's layout differs: name the version rather than the mismatch.
            match serde_json::from_str::<Version>(text) {
                Ok(Version { format }) if format != FORMAT => other_format(format),
                _ => bad(e),
            }
        })?;
        check_format(opened.format)?;
        let state = opened.state;
        let wanted = u64::from_str_radix(&opened.checksum, 16).ok();
        check_sum(wanted, state.checksum())?;
        state.checked()
    }

    /// The state in a compact binary form: a magic number, postcard, and the checksum (8
    /// bytes, little-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        let body = postcard::to_stdvec(self).expect("a state serialises");
        let mut out = MAGIC.to_vec();
        out.extend(&body);
        out.extend(fnv1a(&body).to_le_bytes());
        out
    }

    /// A state from [`to_bytes`](Self::to_bytes)' bytes.
    ///
    /// # Errors
    /// [`CalibError::InvalidConfig`] for bytes that are not a state of this version, or whose
    /// checksum does not match their content.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let sealed = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
            CalibError::InvalidConfig("not a binary evaluation state (bad magic number)".into())
        })?;
        // The version leads, so a state of another version is named as such, not as garbage.
        if let Ok((format, _)) = postcard::take_from_bytes::<u32>(sealed) {
            check_format(format)?;
        }
        let Some((body, sum)) = sealed.split_last_chunk::<8>() else {
            return Err(CalibError::InvalidConfig("a truncated evaluation state".into()));
        };
        check_sum(Some(u64::from_le_bytes(*sum)), fnv1a(body))?;
        let state: Self = postcard::from_bytes(body)
            .map_err(|e| CalibError::InvalidConfig(format!("not an evaluation state: {e}")))?;
        state.checked()
    }

    /// The checksum of the content: 64-bit FNV-1a of the postcard bytes.
    fn checksum(&self) -> u64 {
        fnv1a(&postcard::to_stdvec(self).expect("a state serialises"))
    }

    fn checked(self) -> Result<Self> {
        check_format(self.format)?;
        self.config.validate()?;
        Ok(self)
    }
}

/// 64-bit FNV-1a (Fowler, Noll, Vo): `h = (h ^ byte) * 0x100000001b3` from `0xcbf29ce484222325`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Refuses a state whose recorded checksum `wanted` is not `got`.
fn check_sum(wanted: Option<u64>, got: u64) -> Result<()> {
    if wanted == Some(got) {
        return Ok(());
    }
    Err(CalibError::InvalidConfig(
        "the evaluation state's checksum does not match its content: the file was damaged or \
         edited after it was written; write it again from its rows"
            .into(),
    ))
}

fn check_format(format: u32) -> Result<()> {
    if format == FORMAT { Ok(()) } else { Err(other_format(format)) }
}

/// The refusal of a state of format `format`.
fn other_format(format: u32) -> CalibError {
    CalibError::InvalidConfig(format!(
        "evaluation state of format {format}, this calib reads format {FORMAT} (states before \
         format 6 carry no checksum: write them again from their rows)"
    ))
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use burn::tensor::Device;

    use super::*;
    use crate::EvaluationConfig;
    use crate::input::{InputConfig, Predictions, ScoreKind};

    fn state() -> EvaluationState {
        let (z, y) = crate::synthetic::overconfident_logits(500, 3, 0.8, 2.0, 9);
        let preds =
            Predictions::from_host(&z, 3, &y, InputConfig::new(ScoreKind::Logits), &Device::flex())
                .unwrap();
        let mut stream = EvaluationConfig::new().streaming().unwrap();
        stream.update(&preds).unwrap();
        stream.state().clone()
    }

    #[test]
    fn states_round_trip_and_refuse_what_changed() {
        let s = state();
        let json = s.to_json();
        assert_eq!(EvaluationState::from_json(&json).unwrap(), s);
        assert_eq!(EvaluationState::from_bytes(&s.to_bytes()).unwrap(), s);
        // A number edited in the JSON: its checksum no longer matches.
        let count = "\"n_samples\":500";
        assert!(json.contains(count), "{json}");
        let edited = json.replacen(count, "\"n_samples\":501", 1);
        let e = EvaluationState::from_json(&edited).unwrap_err().to_string();
        assert!(e.contains("checksum does not match"), "{e}");
        // A byte flipped anywhere in the body of the binary form.
        let bytes = s.to_bytes();
        for at in [MAGIC.len() + 5, bytes.len() / 2, bytes.len() - 9] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            let e = EvaluationState::from_bytes(&damaged).unwrap_err().to_string();
            assert!(e.contains("checksum does not match"), "byte {at}: {e}");
        }
        let e = EvaluationState::from_bytes(&bytes[..MAGIC.len() + 4]).unwrap_err().to_string();
        assert!(e.contains("checksum") || e.contains("truncated"), "{e}");
    }

    #[test]
    fn states_of_another_format_are_refused_by_name() {
        let json = state().to_json().replacen("{\"format\":6", "{\"format\":5", 1);
        let e = EvaluationState::from_json(&json).unwrap_err().to_string();
        assert!(e.contains("format 5") && e.contains("no checksum"), "{e}");
        let old = "{\"format\":5,\"config\":{}}";
        let e = EvaluationState::from_json(old).unwrap_err().to_string();
        assert!(e.contains("format 5"), "{e}");
    }
}

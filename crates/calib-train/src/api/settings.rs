//! [`SavedSettings`]: the typed choices that shape a saved calibrator beyond its parameters,
//! and their reading from format-1 files, which held them as f64 codes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::method::Method;
use crate::binary::Form;
use crate::error::{FitError, Result};
use crate::fit::Regularisation;

/// The choices a calibrator needs to be rebuilt from its parameters, each present only for
/// the methods it concerns:
///
/// ```json
/// {"form": "top-label", "base": "isotonic"}                     binary maps (base: top-label)
/// {"regularisation": {"kind": "odir", "lambda": 0.01, "mu": 0.01}}   matrix scaling, Dirichlet
/// {"on_logit": true}                                            Platt scaling
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSettings {
    /// A binary map's form: on binary scores, one-vs-rest or top-label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Form>,
    /// A top-label calibrator's binary method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Method>,
    /// The penalty an affine map was fitted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regularisation: Option<Regularisation>,
    /// Platt scaling: whether it maps the scores' log-odds (else the scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_logit: Option<bool>,
}

impl SavedSettings {
    /// The settings a format-1 file coded as hyper-parameters (`form`, `base`,
    /// `penalty_kind`, `on_logit`); the codes are taken out of `hyperparameters`, which keeps
    /// the real-valued ones (`lambda`, `mu`).
    ///
    /// # Errors
    /// [`FitError::Format`] for a code that names nothing.
    pub(crate) fn from_codes(hyperparameters: &mut BTreeMap<String, f64>) -> Result<Self> {
        let unknown =
            |what: &str, code: f64| FitError::Format(format!("unknown {what} code {code}"));
        let mut settings = Self::default();
        if let Some(code) = hyperparameters.remove("form") {
            settings.form = Some(Form::from_code(code).ok_or_else(|| unknown("form", code))?);
        }
        if let Some(code) = hyperparameters.remove("base") {
            settings.base = Some(Method::from_code(code).ok_or_else(|| unknown("base", code))?);
        }
        if let Some(kind) = hyperparameters.remove("penalty_kind") {
            let get = |name: &str| hyperparameters.get(name).copied().unwrap_or(0.0);
            settings.regularisation = Some(Regularisation::decode(kind, get("lambda"), get("mu"))?);
        }
        if let Some(code) = hyperparameters.remove("on_logit") {
            settings.on_logit = Some(code != 0.0);
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_1_codes_become_typed_settings() {
        let mut h = BTreeMap::from([
            ("form".to_string(), 2.0),
            ("base".to_string(), 5.0),
            ("penalty_kind".to_string(), 1.0),
            ("lambda".to_string(), 0.5),
            ("mu".to_string(), 0.25),
            ("on_logit".to_string(), 0.0),
        ]);
        let s = SavedSettings::from_codes(&mut h).unwrap();
        assert_eq!(s.form, Some(Form::TopLabel));
        assert_eq!(s.base, Some(Method::Isotonic));
        assert_eq!(s.regularisation, Some(Regularisation::Odir { lambda: 0.5, mu: 0.25 }));
        assert_eq!(s.on_logit, Some(false));
        assert_eq!(h.keys().collect::<Vec<_>>(), ["lambda", "mu"]);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"form":"top-label","base":"isotonic","regularisation":{"kind":"odir","lambda":0.5,"mu":0.25},"on_logit":false}"#
        );
        assert_eq!(serde_json::from_str::<SavedSettings>(&json).unwrap(), s);
        assert!(SavedSettings::from_codes(&mut BTreeMap::from([("form".into(), 7.0)])).is_err());
        assert!(serde_json::from_str::<SavedSettings>(r#"{"from":"binary"}"#).is_err());
    }
}

//! [`Method`]: the calibration methods, as named on the command line and in saved files,
//! generated from the registry.

use serde::{Deserialize, Serialize};

use super::registry::calibrators;
use crate::error::{FitError, Result};

/// Whether a family is the binary maps.
macro_rules! is_map {
    (map) => {
        true
    };
    (scaling) => {
        false
    };
}

/// `Method` and its tables, from the registry.
macro_rules! define_method {
    (
        calibrators { $($family:ident $variant:ident = $name:literal, $code:literal : $cal:ident by $config:ident;)* }
        methods { $($mfamily:ident $mvariant:ident = $mname:literal, $mcode:literal fits $base:ident;)* }
        forms { $($form:ident : $fty:ident of $of:ident when $key:ident;)* }
    ) => {
        /// The calibration methods, as named on the command line and in saved files: the
        /// calibrators of the registry, then the methods that fit one of them another way.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Method {
            $(
                #[doc = concat!("`", $name, "`: [`crate::", stringify!($cal), "`].")]
                #[serde(rename = $name)]
                $variant,
            )*
            $(
                #[doc = concat!("`", $mname, "`: fits ", stringify!($base), " another way.")]
                #[serde(rename = $mname)]
                $mvariant,
            )*
        }

        impl Method {
            /// Every method, in the order `calib compare` lists them.
            pub const ALL: [Method; [$($name,)* $($mname,)*].len()] =
                [$(Self::$variant,)* $(Self::$mvariant,)*];

            /// The name used on the command line and in saved files.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    $(Self::$mvariant => $mname,)*
                }
            }

            /// True for the methods that calibrate binary scores (and K-class input
            /// one-vs-rest or top-label).
            pub fn is_binary_map(self) -> bool {
                match self {
                    $(Self::$variant => is_map!($family),)*
                    $(Self::$mvariant => is_map!($mfamily),)*
                }
            }

            /// The number of a top-label base in format-1 files. Fixed for each method.
            pub(crate) fn code(self) -> f64 {
                match self {
                    $(Self::$variant => $code as f64,)*
                    $(Self::$mvariant => $mcode as f64,)*
                }
            }
        }
    };
}

calibrators!(define_method);

impl Method {
    /// The method of [`Method::code`].
    pub(crate) fn from_code(code: f64) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.code() == code)
    }

    /// Parses a name (as [`Method::name`] writes it).
    ///
    /// # Errors
    /// [`FitError::InvalidConfig`] naming the known methods.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let known: Vec<_> = Self::ALL.iter().map(|m| m.name()).collect();
            FitError::InvalidConfig(format!(
                "unknown method `{name}`; expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Method {
    type Err = FitError;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_name(s)
    }
}

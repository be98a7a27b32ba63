//! `calib fit METHOD`: one subcommand per method of calib-train's registry, each with the
//! data arguments and its own options ([`MethodOptions`]), generated from the registry.

mod maps;
mod options;
mod scaling;

use std::path::PathBuf;

use calib_train::Method;
use clap::{Args, Subcommand};

use super::{DataArgs, Format};
use crate::error::{CliError, Result};
use maps::{
    Affine, Bbq, Beta, CdfSpline, Cir, Histogram, Isotonic, Lce, Quadratic, ScalingBinning, Spline,
    TopLabel, VennAbers,
};
pub use options::{FitInput, MethodOptions};
use scaling::{
    Dirichlet, EceTemperature, Ets, Kernel, Matrix, Platt, Sms, Svs, Temperature, Vector,
};

/// `calib fit`.
#[derive(Debug, Clone, Args)]
pub struct FitArgs {
    /// The method.
    #[command(subcommand)]
    pub method: FitMethod,
}

/// What every `calib fit METHOD` takes besides the method's options `O`.
#[derive(Debug, Clone, Args)]
pub struct FitCommand<O: Args> {
    /// The data (default split: val).
    #[command(flatten)]
    pub data: DataArgs,
    /// Where to save the fitted calibrator (JSON).
    #[arg(short, long, value_name = "PARAMS.json")]
    pub output: PathBuf,
    /// How to print the fit record.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The method's options.
    #[command(flatten)]
    pub options: O,
}

/// A `calib fit` subcommand's parts.
pub struct FitParts<'a> {
    /// The method.
    pub method: Method,
    /// The data.
    pub data: &'a DataArgs,
    /// The output file.
    pub output: &'a PathBuf,
    /// How to print the fit record.
    pub format: Format,
    /// The method's options.
    pub options: &'a dyn MethodOptions,
}

/// Generates [`FitMethod`] and [`default_options`] from the registry.
macro_rules! fit_methods {
    (
        calibrators { $($family:ident $variant:ident = $name:literal, $code:literal: $cal:ident by $config:ident;)* }
        methods { $($mfamily:ident $mvariant:ident = $mname:literal, $mcode:literal fits $base:ident;)* }
        forms { $($form:ident : $fty:ident of $of:ident when $key:ident;)* }
    ) => {
        /// The method to fit, with its options (calib-train's registry).
        #[derive(Debug, Clone, Subcommand)]
        pub enum FitMethod {
            $(
                #[doc = concat!("`calib fit ", $name, "`.")]
                #[command(name = $name, about = <$variant as MethodOptions>::about(), long_about = None)]
                $variant(FitCommand<$variant>),
            )*
            $(
                #[doc = concat!("`calib fit ", $mname, "`.")]
                #[command(name = $mname, about = <$mvariant as MethodOptions>::about(), long_about = None)]
                $mvariant(FitCommand<$mvariant>),
            )*
            /// A name that is not a method.
            #[command(external_subcommand)]
            Unknown(Vec<String>),
        }

        impl FitMethod {
            /// The method, the data, the output and the method's options.
            ///
            /// # Errors
            /// [`CliError::Usage`] naming the known methods for a name that is not one.
            pub fn parts(&self) -> Result<FitParts<'_>> {
                Ok(match self {
                    $(Self::$variant(c) => c.parts(Method::$variant),)*
                    $(Self::$mvariant(c) => c.parts(Method::$mvariant),)*
                    Self::Unknown(args) => {
                        let name = args.first().map_or("", String::as_str);
                        return Err(crate::fitting::parse_method(name).err().unwrap_or_else(|| {
                            CliError::Usage(format!("`{name}` cannot be fitted from here"))
                        }));
                    }
                })
            }
        }

        /// The command-line options of `method` alone (no data arguments): what other front
        /// ends (the Python package) read to offer the same options under the same names.
        ///
        /// # Errors
        /// [`CliError::Usage`] for a method this command line does not know.
        pub fn options_command(method: Method) -> Result<clap::Command> {
            Ok(match method {
                $(Method::$variant => <$variant as Args>::augment_args(clap::Command::new($name))
                    .about(<$variant as MethodOptions>::about()),)*
                $(Method::$mvariant => <$mvariant as Args>::augment_args(clap::Command::new($mname))
                    .about(<$mvariant as MethodOptions>::about()),)*
                other => {
                    return Err(CliError::Usage(format!("`{other}` cannot be fitted from here")));
                }
            })
        }

        /// The options of `method` parsed from `args` (command-line words without the method
        /// name: `["--bins", "10"]`), checked as `calib fit METHOD` checks them.
        ///
        /// # Errors
        /// [`CliError::Usage`] with clap's first line for an unknown or malformed option.
        pub fn parse_options(method: Method, args: &[String]) -> Result<Box<dyn MethodOptions>> {
            let words = std::iter::once(method.to_string()).chain(args.iter().cloned());
            let command = options_command(method)?;
            let matches = command.try_get_matches_from(words).map_err(clap_usage)?;
            Ok(match method {
                $(Method::$variant => Box::new(<$variant as clap::FromArgMatches>::from_arg_matches(&matches).map_err(clap_usage)?),)*
                $(Method::$mvariant => Box::new(<$mvariant as clap::FromArgMatches>::from_arg_matches(&matches).map_err(clap_usage)?),)*
                other => {
                    return Err(CliError::Usage(format!("`{other}` cannot be fitted from here")));
                }
            })
        }

        /// The default options of `method` (what `calib compare` fits with).
        ///
        /// # Errors
        /// [`CliError::Usage`] for a method this command line does not know.
        pub fn default_options(method: Method) -> Result<Box<dyn MethodOptions>> {
            Ok(match method {
                $(Method::$variant => Box::new(<$variant>::default()),)*
                $(Method::$mvariant => Box::new(<$mvariant>::default()),)*
                other => {
                    return Err(CliError::Usage(format!("`{other}` cannot be fitted from here")));
                }
            })
        }
    };
}

calib_train::calibrators!(fit_methods);

/// clap's error as one line of usage (its first, without the `error: ` prefix).
fn clap_usage(e: clap::Error) -> CliError {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or("invalid options");
    CliError::Usage(line.strip_prefix("error: ").unwrap_or(line).to_string())
}

impl<O: Args + MethodOptions + 'static> FitCommand<O> {
    fn parts(&self, method: Method) -> FitParts<'_> {
        FitParts {
            method,
            data: &self.data,
            output: &self.output,
            format: self.format,
            options: &self.options,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fitted_method_has_its_options_alone() {
        for method in Method::ALL {
            let Ok(command) = options_command(method) else { continue };
            let ids: Vec<&str> = command.get_arguments().map(|a| a.get_id().as_str()).collect();
            assert!(!ids.contains(&"output") && !ids.contains(&"split"), "{method}: {ids:?}");
            assert!(command.get_about().is_some(), "{method} says what it is");
        }
        let bins = options_command(Method::Histogram).unwrap();
        assert!(bins.get_arguments().any(|a| a.get_long() == Some("bins")));
    }

    #[test]
    fn options_parse_as_calib_fit_parses_them() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(parse_options(Method::Histogram, &words(&["--bins=10"])).is_ok());
        assert!(parse_options(Method::Temperature, &[]).is_ok());
        let err = parse_options(Method::Histogram, &words(&["--bins", "many"])).err().unwrap();
        let text = err.to_string();
        assert!(text.contains("--bins") && !text.contains('\n'), "{text}");
        let err = parse_options(Method::Temperature, &words(&["--nope"])).err().unwrap();
        assert!(err.to_string().contains("--nope"), "{err}");
    }
}

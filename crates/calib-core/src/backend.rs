//! Which burn backend a [`Device`] runs on, and the float precision calib uses there.

use burn::tensor::{DType, Device};
use serde::{Deserialize, Serialize};

/// The burn backends calib knows how to drive, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BackendKind {
    /// burn's pure-Rust CPU backend (`Device::flex()`).
    Flex,
    /// burn's ndarray CPU backend (`Device::ndarray()`, deprecated by burn, supported here).
    Ndarray,
    /// Any GPU or GPU-like backend (wgpu, cuda, ...).
    Gpu,
}

impl BackendKind {
    /// Classifies `device` (autodiff wrappers are ignored).
    pub fn of(device: &Device) -> Self {
        #[cfg(feature = "flex")]
        if *device == Device::flex() {
            return Self::Flex;
        }
        #[cfg(feature = "ndarray")]
        #[allow(deprecated)]
        if *device == Device::ndarray() {
            return Self::Ndarray;
        }
        let _ = device;
        Self::Gpu
    }

    /// The name used on the command line and in fit records.
    pub fn name(self) -> &'static str {
        match self {
            Self::Flex => "flex",
            Self::Ndarray => "ndarray",
            Self::Gpu => "gpu",
        }
    }

    /// True for the CPU backends, whose tensors already live in host memory.
    pub fn is_cpu(self) -> bool {
        matches!(self, Self::Flex | Self::Ndarray)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Float precision of the metric computations on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Precision {
    /// f64 on the CPU backends, f32 on GPU backends.
    ///
    /// # Note
    /// wgpu on a software Vulkan driver reports f64 support but returns garbage from `exp`
    /// and `log`, so GPU backends compute in f32; bins and sums are merged in f64 on the host.
    #[default]
    Auto,
    /// Always f32.
    F32,
    /// Always f64 (only on backends where f64 is exact).
    F64,
}

impl Precision {
    /// The dtype to compute in on `device`.
    pub fn dtype(self, device: &Device) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F64 => DType::F64,
            Self::Auto if BackendKind::of(device).is_cpu() => DType::F64,
            Self::Auto => DType::F32,
        }
    }
}

/// Opens the device named `name` (`flex`, `ndarray`, `wgpu`, `cuda`) and checks that it runs.
///
/// # Errors
/// [`crate::CalibError::Backend`] when the backend is not compiled in (name the cargo feature) or
/// no adapter answers (e.g. wgpu without a Vulkan driver).
pub fn open_device(name: &str) -> crate::Result<Device> {
    use crate::CalibError;
    let device = match name {
        "flex" | "ndarray" | "wgpu" | "cuda" => compiled_device(name).ok_or_else(|| {
            CalibError::Backend(format!(
                "backend `{name}` is not compiled in; rebuild with `--features {name}`"
            ))
        })?,
        other => {
            return Err(CalibError::Backend(format!(
                "unknown backend `{other}`; expected flex, ndarray, wgpu or cuda"
            )));
        }
    };
    // A backend without an adapter panics on first use; turn that into an error.
    let probe = device.clone();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let ok = std::panic::catch_unwind(move || {
        let t = burn::tensor::Tensor::<1>::from_floats([1.0, 2.0], &probe);
        t.sum().into_scalar::<f32>()
    });
    std::panic::set_hook(hook);
    match ok {
        Ok(3.0) => Ok(device),
        Ok(v) => Err(CalibError::Backend(format!("backend `{name}` computed 1 + 2 = {v}"))),
        Err(_) => Err(CalibError::Backend(format!("backend `{name}` has no usable device here"))),
    }
}

/// The backends compiled into this build, by name (`flex`, `ndarray`, `wgpu`, `cuda`), whether
/// or not a device answers here (see [`open_device`]).
pub fn compiled_backends() -> Vec<&'static str> {
    ["flex", "ndarray", "wgpu", "cuda"]
        .into_iter()
        .filter(|n| compiled_device(n).is_some())
        .collect()
}

/// The device of a compiled-in backend, by name.
fn compiled_device(name: &str) -> Option<Device> {
    match name {
        #[cfg(feature = "flex")]
        "flex" => Some(Device::flex()),
        #[cfg(feature = "ndarray")]
        #[allow(deprecated)]
        "ndarray" => Some(Device::ndarray()),
        #[cfg(feature = "wgpu")]
        "wgpu" => Some(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        #[cfg(feature = "cuda")]
        "cuda" => Some(Device::cuda(0usize)),
        _ => None,
    }
}

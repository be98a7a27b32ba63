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
        "wgpu" if cfg!(feature = "wgpu") => return open_wgpu(WgpuApi::from_env()?),
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
    probe(device, name)
}

/// `device` once it has added 1 + 2: a backend without an adapter panics on first use, and
/// that becomes an error.
fn probe(device: Device, name: &str) -> crate::Result<Device> {
    use crate::CalibError;
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

/// The graphics API the `wgpu` backend runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WgpuApi {
    /// Whichever the runtime picks (Vulkan first on Linux, then DX12, then OpenGL).
    #[default]
    Auto,
    /// Vulkan: a GPU's driver or Mesa's software lavapipe (`mesa-vulkan-drivers`).
    Vulkan,
    /// Metal.
    Metal,
    /// DirectX 12.
    Dx12,
    /// OpenGL (Mesa's llvmpipe on a machine without a GPU).
    Gl,
}

impl WgpuApi {
    /// The environment variable that pins the API of `open_device("wgpu")`.
    pub const ENV: &'static str = "CALIB_WGPU_API";

    /// Parses `auto`, `vulkan`, `metal`, `dx12` or `gl`.
    ///
    /// # Errors
    /// [`crate::CalibError::Backend`] for other names.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Self::Auto,
            "vulkan" => Self::Vulkan,
            "metal" => Self::Metal,
            "dx12" => Self::Dx12,
            "gl" | "opengl" => Self::Gl,
            other => {
                return Err(crate::CalibError::Backend(format!(
                    "{}={other}: expected auto, vulkan, metal, dx12 or gl",
                    Self::ENV
                )));
            }
        })
    }

    /// The API `CALIB_WGPU_API` names (`Auto` when unset).
    ///
    /// # Errors
    /// As [`Self::from_name`].
    pub fn from_env() -> crate::Result<Self> {
        std::env::var(Self::ENV).map_or(Ok(Self::Auto), |v| Self::from_name(&v))
    }
}

/// Opens the default wgpu device on `api` and checks that it runs (`open_device("wgpu")`
/// with the API pinned: an API the machine has no adapter for is an error, never a fallback).
///
/// # Errors
/// [`crate::CalibError::Backend`] when wgpu is not compiled in or no adapter answers.
pub fn open_wgpu(api: WgpuApi) -> crate::Result<Device> {
    #[cfg(feature = "wgpu")]
    {
        use cubecl::wgpu::{WgpuBackend, WgpuDevice, WgpuDeviceKind};
        let backend = match api {
            WgpuApi::Auto => WgpuBackend::Auto,
            WgpuApi::Vulkan => WgpuBackend::Vulkan,
            WgpuApi::Metal => WgpuBackend::Metal,
            WgpuApi::Dx12 => WgpuBackend::Dx12,
            WgpuApi::Gl => WgpuBackend::Gl,
        };
        let device = Device::new(WgpuDevice::new(WgpuDeviceKind::DefaultDevice).on(backend));
        let name = match api {
            WgpuApi::Auto => "wgpu".to_string(),
            pinned => format!("wgpu on {pinned:?}"),
        };
        probe(device, &name).map_err(|e| match (api, e) {
            (WgpuApi::Vulkan, crate::CalibError::Backend(m)) => {
                crate::CalibError::Backend(format!(
                    "{m}: Vulkan needs a GPU's driver or Mesa's software lavapipe (apt-get install \
                 mesa-vulkan-drivers)"
                ))
            }
            (_, e) => e,
        })
    }
    #[cfg(not(feature = "wgpu"))]
    {
        let _ = api;
        Err(crate::CalibError::Backend(
            "backend `wgpu` is not compiled in; rebuild with `--features wgpu`".into(),
        ))
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

//! [`Array`]: one array as a file holds it (shape, element type, values), before it means
//! anything; and the conversions every reader shares (scores to floats, labels to class indices).

use crate::error::{IoError, Result};

/// The values of an array, widened without loss: f16 and f32 to f32, f64 as is, every integer
/// type to i64, bool to i64 (0/1).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// float16 or float32 (f16 widens to f32 exactly).
    F32(Vec<f32>),
    /// float64.
    F64(Vec<f64>),
    /// Any integer or bool type.
    Int(Vec<i64>),
}

impl Values {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::Int(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Self::F32(v) => f64::from(v[i]),
            Self::F64(v) => v[i],
            Self::Int(v) => v[i] as f64,
        }
    }
}

/// One array read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// Where it came from, for messages (`file.npz:val_logits`).
    pub origin: String,
    /// The element type as the file names it (`float32`, `int64`, ...).
    pub dtype: String,
    /// Shape (row-major).
    pub shape: Vec<usize>,
    /// Values, row-major.
    pub values: Values,
}

impl Array {
    /// Checks that the shape's product matches the values (readers call this once).
    ///
    /// # Errors
    /// [`IoError::Input`] when a truncated file left fewer values than the shape says.
    pub fn new(origin: String, dtype: String, shape: Vec<usize>, values: Values) -> Result<Self> {
        let expected: usize = shape.iter().product();
        if expected != values.len() {
            return Err(IoError::input(
                &origin,
                format!("shape {shape:?} needs {expected} values, found {}", values.len()),
            ));
        }
        Ok(Self { origin, dtype, shape, values })
    }

    fn is_float(&self) -> bool {
        matches!(self.values, Values::F32(_) | Values::F64(_))
    }

    /// The array as scores: `(values, n_rows, n_columns)`, a 1-D array being one column.
    ///
    /// # Errors
    /// [`IoError::Input`] for integer arrays, arrays of rank 0 or above 2, and empty arrays.
    pub fn into_scores(self) -> Result<(Scores, usize, usize)> {
        if !self.is_float() {
            return Err(IoError::input(
                &self.origin,
                format!("scores must be float16, float32 or float64, found {}", self.dtype),
            ));
        }
        let (n, k) = match self.shape[..] {
            [n] => (n, 1),
            [n, k] => (n, k),
            _ => {
                return Err(IoError::input(
                    &self.origin,
                    format!("scores must be 1-D or 2-D, found shape {:?}", self.shape),
                ));
            }
        };
        if n == 0 || k == 0 {
            return Err(IoError::input(
                &self.origin,
                format!("no scores (shape {:?})", self.shape),
            ));
        }
        let scores = match self.values {
            Values::F32(v) => Scores::F32(v),
            Values::F64(v) => Scores::F64(v),
            Values::Int(_) => unreachable!("checked above"),
        };
        Ok((scores, n, k))
    }

    /// The array as class labels: a 1-D array of integers (or integral floats), or a 2-D one-hot
    /// matrix `[N, K]` whose rows hold a single 1.
    ///
    /// # Errors
    /// [`IoError::Input`] for fractional or negative values, one-hot rows that are not one-hot,
    /// and ranks other than 1 or 2. Range checks against K happen later, in calib-core.
    pub fn into_labels(self) -> Result<Vec<i64>> {
        let origin = self.origin.clone();
        match self.shape[..] {
            [n] => (0..n)
                .map(|i| {
                    let v = self.values.get_f64(i);
                    match &self.values {
                        Values::Int(ints) => Ok(ints[i]),
                        _ if v.fract() == 0.0 && v.abs() < 9.0e15 => Ok(v as i64),
                        _ => Err(IoError::input(
                            &origin,
                            format!("label at row {i} is {v}, not a class index"),
                        )),
                    }
                })
                .collect(),
            [n, k] => (0..n)
                .map(|i| {
                    let row: Vec<f64> = (0..k).map(|j| self.values.get_f64(i * k + j)).collect();
                    let ones: Vec<usize> = (0..k).filter(|&j| row[j] == 1.0).collect();
                    let zeros = row.iter().filter(|&&v| v == 0.0).count();
                    if ones.len() == 1 && zeros == k - 1 {
                        Ok(ones[0] as i64)
                    } else {
                        Err(IoError::input(
                            &origin,
                            format!(
                                "2-D labels must be one-hot, but row {i} is not a single 1 \
                                 among 0s"
                            ),
                        ))
                    }
                })
                .collect(),
            _ => Err(IoError::input(
                &origin,
                format!("labels must be 1-D (or one-hot 2-D), found shape {:?}", self.shape),
            )),
        }
    }
}

/// Score values in the precision the file stored them.
#[derive(Debug, Clone, PartialEq)]
pub enum Scores {
    /// float16/float32 values.
    F32(Vec<f32>),
    /// float64 values.
    F64(Vec<f64>),
}

impl Scores {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` as f64.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Self::F32(v) => f64::from(v[i]),
            Self::F64(v) => v[i],
        }
    }

    /// Values as f64 (a copy).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Self::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Self::F64(v) => v.clone(),
        }
    }

    /// Applies `f` to every value in place (f32 values through f64), each core a block of the
    /// values, compiled for AVX2 or AVX-512 where the CPU has it (`calib_kernels::dispatch`)
    /// so that a branch-free `f` vectorises.
    pub fn map_in_place(&mut self, f: impl Fn(f64) -> f64 + Sync) {
        match self {
            Self::F32(v) => in_blocks(v, |x| f(f64::from(x)) as f32),
            Self::F64(v) => in_blocks(v, &f),
        }
    }
}

/// Values below this many are mapped on one thread.
const MIN_VALUES_PER_THREAD: usize = 1 << 16;

/// `values[i] = f(values[i])` in blocks on the cores, under `calib_kernels::dispatch`.
fn in_blocks<T: Copy + Send>(values: &mut [T], f: impl Fn(T) -> T + Sync) {
    calib_kernels::for_row_blocks(values, 1, MIN_VALUES_PER_THREAD, |_, block| {
        calib_kernels::dispatch(
            #[inline(always)]
            || block.iter_mut().for_each(|x| *x = f(*x)),
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(shape: Vec<usize>, values: Values) -> Array {
        Array::new("t".into(), "test".into(), shape, values).unwrap()
    }

    #[test]
    fn one_hot_labels_become_indices() {
        let a = array(vec![3, 3], Values::F32(vec![0., 1., 0., 1., 0., 0., 0., 0., 1.]));
        assert_eq!(a.into_labels().unwrap(), vec![1, 0, 2]);
    }

    #[test]
    fn not_one_hot_is_refused_naming_the_row() {
        let a = array(vec![2, 2], Values::Int(vec![0, 1, 1, 1]));
        let err = a.into_labels().unwrap_err().to_string();
        assert!(err.contains("row 1"), "{err}");
    }

    #[test]
    fn integral_float_labels_are_accepted_fractional_refused() {
        let ok = array(vec![2], Values::F64(vec![3.0, 0.0]));
        assert_eq!(ok.into_labels().unwrap(), vec![3, 0]);
        let bad = array(vec![2], Values::F64(vec![3.0, 0.5]));
        assert!(bad.into_labels().unwrap_err().to_string().contains("row 1 is 0.5"));
    }

    #[test]
    fn integer_scores_are_refused() {
        let a = array(vec![2, 2], Values::Int(vec![0, 1, 1, 0]));
        assert!(a.into_scores().unwrap_err().to_string().contains("float"));
    }

    #[test]
    fn truncated_shapes_are_refused() {
        let r = Array::new("t".into(), "float32".into(), vec![2, 3], Values::F32(vec![0.0; 5]));
        assert!(r.unwrap_err().to_string().contains("needs 6 values, found 5"));
    }
}

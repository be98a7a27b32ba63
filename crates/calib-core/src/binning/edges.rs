//! Static bin edges and the right-closed bin rule.

use crate::error::{CalibError, Result};

/// The `B + 1` edges `b / B` of even bins.
pub fn even_edges(n_bins: usize) -> Vec<f64> {
    (0..=n_bins).map(|b| b as f64 / n_bins as f64).collect()
}

/// Checks custom edges: at least two, strictly increasing, from exactly 0 to exactly 1.
pub fn validate_edges(edges: &[f64]) -> Result<()> {
    let bad = |why: &str| Err(CalibError::InvalidConfig(format!("bin edges {edges:?}: {why}")));
    if edges.len() < 2 {
        return bad("need at least two edges");
    }
    if edges[0] != 0.0 || edges[edges.len() - 1] != 1.0 {
        return bad("must start at 0 and end at 1");
    }
    if edges.windows(2).any(|w| w[0] >= w[1]) {
        return bad("must be strictly increasing");
    }
    Ok(())
}

/// The bin of score `s` under right-closed `edges`: the number of interior edges below `s`.
///
/// `edges[b] < s <= edges[b + 1]` gives `b`; `s = 0` lands in bin 0 and `s = 1` in the last bin
/// (docs/conventions.md, "Even bins").
///
/// ```
/// use calib_core::binning::{bin_of, even_edges};
/// let e = even_edges(4);
/// assert_eq!(bin_of(0.0, &e), 0);
/// assert_eq!(bin_of(0.25, &e), 0); // on an edge: the lower bin
/// assert_eq!(bin_of(0.2500001, &e), 1);
/// assert_eq!(bin_of(1.0, &e), 3);
/// ```
pub fn bin_of(s: f64, edges: &[f64]) -> usize {
    let interior = &edges[1..edges.len() - 1];
    interior.partition_point(|&e| e < s)
}

/// [`bin_of`] made fast for even bins: `ceil(s B) - 1`, then one exact step against the
/// edges, which corrects the product's rounding. Same answer as [`bin_of`] for every score.
#[derive(Debug, Clone)]
pub struct BinLookup {
    edges: Vec<f64>,
    even: bool,
}

impl BinLookup {
    /// Lookup for right-closed `edges` (even or custom).
    pub fn new(edges: Vec<f64>) -> Self {
        let b = edges.len() - 1;
        let even = edges == even_edges(b);
        Self { edges, even }
    }

    /// Number of bins.
    pub fn n_bins(&self) -> usize {
        self.edges.len() - 1
    }

    /// The upper edge of bin 0: `s` is in bin 0 iff `s <= first_edge()` (`+inf` with one bin).
    pub fn first_edge(&self) -> f64 {
        if self.n_bins() > 1 { self.edges[1] } else { f64::INFINITY }
    }

    /// The bin of `s`.
    #[inline]
    pub fn bin(&self, s: f64) -> usize {
        let nb = self.edges.len() - 1;
        if !self.even {
            return bin_of(s, &self.edges);
        }
        // ceil(x) for x >= 0 without a libm call (no SSE4.1 rounding at the baseline target).
        let x = s * nb as f64;
        let t = x as usize;
        let ceil = t + ((t as f64) < x) as usize;
        let mut b = ceil.saturating_sub(1).min(nb - 1);
        if b > 0 && s <= self.edges[b] {
            b -= 1;
        } else if b + 1 < nb && s > self.edges[b + 1] {
            b += 1;
        }
        b
    }
}

/// The largest f32 at or below `x`: for every f32 score `s`, `s > x` exactly when
/// `s > f32_below(x)`, so f32 scores fall in the bins the f64 edges give them (rounding the
/// edge to the nearest f32 instead can move a score on it to the other side).
pub(crate) fn f32_below(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) > x { f.next_down() } else { f }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_lookup_agrees_with_the_definition() {
        for nb in [1usize, 2, 3, 4, 7, 10, 15, 100] {
            let e = even_edges(nb);
            let fast = BinLookup::new(e.clone());
            let mut x = 1u64;
            let mut probes: Vec<f64> = e.clone();
            probes.extend(
                e.iter().map(|v| f64::from_bits(v.to_bits().wrapping_add(1))).filter(|v| *v <= 1.0),
            );
            probes.extend(e.iter().filter(|v| **v > 0.0).map(|v| f64::from_bits(v.to_bits() - 1)));
            for _ in 0..2000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                probes.push((x >> 11) as f64 / (1u64 << 53) as f64);
            }
            for p in probes {
                assert_eq!(fast.bin(p), bin_of(p, &e), "B = {nb}, p = {p:e}");
            }
        }
    }

    #[test]
    fn edges_of_fifteen_bins_are_exact_fractions() {
        let e = even_edges(15);
        assert_eq!(e.len(), 16);
        assert_eq!(e[0], 0.0);
        assert_eq!(e[15], 1.0);
        assert_eq!(e[5], 5.0 / 15.0);
    }

    #[test]
    fn custom_edges_are_checked() {
        assert!(validate_edges(&[0.0, 0.5, 1.0]).is_ok());
        assert!(validate_edges(&[0.0, 0.5, 0.5, 1.0]).is_err());
        assert!(validate_edges(&[0.1, 1.0]).is_err());
        assert!(validate_edges(&[0.0]).is_err());
    }

    #[test]
    fn f32_edges_compare_as_the_f64_edges() {
        for x in [0.1, 0.2, 1.0 / 3.0, 0.5, 0.7, 1e-3, 0.0, 1.0] {
            let e = f32_below(x);
            assert!(f64::from(e) <= x && f64::from(e.next_up()) > x, "{x}");
            for s in [e.next_down(), e, e.next_up()] {
                assert_eq!(s > e, f64::from(s) > x, "{x} {s}");
            }
        }
    }
}

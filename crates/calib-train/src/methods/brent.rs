//! Brent's root finder (Brent 1973, *Algorithms for Minimization without Derivatives*, ch. 4,
//! `zeroin`): inverse quadratic interpolation and secant steps, bisection when they stall.

/// A root of `f` in `[a, b]`, given `f(a)` and `f(b)` of opposite signs, to `tol` in `x`.
pub(crate) fn root(
    mut f: impl FnMut(f64) -> f64,
    (mut a, mut fa): (f64, f64),
    (mut b, mut fb): (f64, f64),
    tol: f64,
) -> f64 {
    debug_assert!(fa * fb <= 0.0, "the bracket must change sign");
    let (mut c, mut fc) = (a, fa);
    let (mut d, mut e) = (b - a, b - a);
    for _ in 0..200 {
        if fb * fc > 0.0 {
            (c, fc) = (a, fa);
            d = b - a;
            e = d;
        }
        if fc.abs() < fb.abs() {
            (a, b, c) = (b, c, b);
            (fa, fb, fc) = (fb, fc, fb);
        }
        let tol1 = 2.0 * f64::EPSILON * b.abs() + 0.5 * tol;
        let m = 0.5 * (c - b);
        if m.abs() <= tol1 || fb == 0.0 {
            return b;
        }
        if e.abs() >= tol1 && fa.abs() > fb.abs() {
            let s = fb / fa;
            let (mut p, mut q) = if a == c {
                (2.0 * m * s, 1.0 - s)
            } else {
                let (q, r) = (fa / fc, fb / fc);
                (
                    s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0)),
                    (q - 1.0) * (r - 1.0) * (s - 1.0),
                )
            };
            if p > 0.0 {
                q = -q;
            }
            p = p.abs();
            if 2.0 * p < (3.0 * m * q - (tol1 * q).abs()).min((e * q).abs()) {
                e = d;
                d = p / q;
            } else {
                d = m;
                e = m;
            }
        } else {
            d = m;
            e = m;
        }
        (a, fa) = (b, fb);
        b += if d.abs() > tol1 { d } else { tol1.copysign(m) };
        fb = f(b);
    }
    b
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_roots_to_tolerance() {
        let f = |x: f64| x.powi(3) - 2.0 * x - 5.0;
        let r = super::root(f, (2.0, f(2.0)), (3.0, f(3.0)), 1e-14);
        assert!((r - 2.094_551_481_542_326_5).abs() < 1e-13, "{r}");
        let g = |x: f64| x.exp() - 10.0;
        let r = super::root(g, (0.0, g(0.0)), (5.0, g(5.0)), 1e-14);
        assert!((r - 10f64.ln()).abs() < 1e-13, "{r}");
    }
}

//! Weights on the 3-simplex minimising a mixture's loss, as ensemble temperature scaling fits
//! them: exactly, face by face.
//!
//! A convex function's minimiser over the simplex lies inside one face (a vertex, an edge or
//! the interior) and minimises the function over that face. So each of the seven faces is
//! minimised by damped Newton in its own coordinates, never leaving it, and the lowest result
//! is kept. Both losses are convex in `w`: the MSE is a quadratic `w' G w - 2 h' w + c`, the
//! log-loss `-mean ln(w . q_i)` (`q_i`: the three components' probabilities of row `i`'s label).

/// The loss of the mixture `w_0 P_0 + w_1 P_1 + w_2 P_2` as a function of `w`.
#[derive(Debug, Clone)]
pub(crate) enum MixtureLoss {
    /// `w' gram w - 2 h' w + constant`.
    Quadratic { gram: [[f64; 3]; 3], h: [f64; 3], constant: f64 },
    /// `-mean_i ln max(w . q_i, 1e-20)`, weighted by `weights` when given.
    LogLoss { at_label: Vec<[f64; 3]>, weights: Option<Vec<f64>> },
}

/// The floor of a mixture probability inside the log-loss (probmetrics' clip).
const FLOOR: f64 = 1e-20;

impl MixtureLoss {
    /// Value, gradient and Hessian at `w`.
    fn evaluate(&self, w: &[f64; 3]) -> (f64, [f64; 3], [[f64; 3]; 3]) {
        match self {
            Self::Quadratic { gram, h, constant } => {
                let gw: [f64; 3] = std::array::from_fn(|r| dot(&gram[r], w));
                let value = dot(w, &gw) - 2.0 * dot(h, w) + constant;
                let grad = std::array::from_fn(|r| 2.0 * (gw[r] - h[r]));
                let hess = std::array::from_fn(|r| std::array::from_fn(|s| 2.0 * gram[r][s]));
                (value, grad, hess)
            }
            Self::LogLoss { at_label, weights } => {
                let weight = |i: usize| weights.as_ref().map_or(1.0, |v| v[i]);
                let n = weights.as_ref().map_or(at_label.len() as f64, |v| v.iter().sum());
                let (mut value, mut grad, mut hess) = (0.0, [0.0; 3], [[0.0; 3]; 3]);
                for (i, q) in at_label.iter().enumerate().filter(|(i, _)| weight(*i) > 0.0) {
                    let (m, v) = (dot(w, q), weight(i));
                    value -= v * m.max(FLOOR).ln();
                    for r in 0..3 {
                        grad[r] -= v * q[r] / m;
                        for s in 0..3 {
                            hess[r][s] += v * q[r] * q[s] / (m * m);
                        }
                    }
                }
                let scale = |v: &mut f64| *v /= n;
                grad.iter_mut().for_each(scale);
                hess.iter_mut().flatten().for_each(scale);
                (value / n, grad, hess)
            }
        }
    }

    /// The value alone.
    pub(crate) fn value(&self, w: &[f64; 3]) -> f64 {
        self.evaluate(w).0
    }
}

fn dot(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The minimiser of `loss` over the simplex and its value.
pub(crate) fn minimise_on_simplex(loss: &MixtureLoss) -> ([f64; 3], f64) {
    let faces: [&[usize]; 7] = [&[0], &[1], &[2], &[0, 1], &[0, 2], &[1, 2], &[0, 1, 2]];
    let mut best = ([1.0, 0.0, 0.0], f64::INFINITY);
    for face in faces {
        let w = minimise_on_face(loss, face);
        let v = loss.value(&w);
        if v < best.1 {
            best = (w, v);
        }
    }
    best
}

/// Damped Newton on the face spanned by the vertices `face`, from its centre, in the
/// barycentric coordinates of its vertices after the first.
fn minimise_on_face(loss: &MixtureLoss, face: &[usize]) -> [f64; 3] {
    let m = face.len() - 1;
    let point = |theta: &[f64]| -> [f64; 3] {
        let mut w = [0.0; 3];
        w[face[0]] = 1.0 - theta.iter().sum::<f64>();
        for (j, t) in theta.iter().enumerate() {
            w[face[j + 1]] = *t;
        }
        w
    };
    let mut theta = vec![1.0 / (m + 1) as f64; m];
    if m == 0 {
        return point(&theta);
    }
    for _ in 0..100 {
        let w = point(&theta);
        let (value, g, h) = loss.evaluate(&w);
        // Directions d_j = e_{face[j+1]} - e_{face[0]}: gradient D'g, Hessian D'HD.
        let dir = |j: usize, v: &[f64; 3]| v[face[j + 1]] - v[face[0]];
        let grad: Vec<f64> = (0..m).map(|j| dir(j, &g)).collect();
        let hd = |j: usize| -> [f64; 3] { std::array::from_fn(|r| dir(j, &h[r])) };
        let hess: Vec<f64> =
            (0..m).flat_map(|a| (0..m).map(move |b| (a, b))).map(|(a, b)| dir(a, &hd(b))).collect();
        let step = solve(&hess, &grad);
        let decrement: f64 = step.iter().zip(&grad).map(|(s, g)| s * g).sum();
        if decrement.is_nan() || decrement <= 1e-30 {
            break;
        }
        // The longest step that stays in the face (theta >= 0, sum <= 1), then backtracking.
        let mut t_max = f64::INFINITY;
        for (th, d) in theta.iter().zip(&step) {
            if *d > 0.0 {
                t_max = t_max.min(th / d);
            }
        }
        let total: f64 = step.iter().sum();
        if total < 0.0 {
            t_max = t_max.min((1.0 - theta.iter().sum::<f64>()) / -total);
        }
        let mut t = 1.0f64.min(0.99 * t_max);
        let moved = loop {
            let next: Vec<f64> = theta.iter().zip(&step).map(|(th, d)| th - t * d).collect();
            if loss.value(&point(&next)) <= value - 1e-4 * t * decrement {
                break Some(next);
            }
            t *= 0.5;
            if t < 1e-12 {
                break None;
            }
        };
        match moved {
            Some(next) => theta = next,
            None => break,
        }
    }
    point(&theta)
}

/// `H^-1 g` for a 1 x 1 or 2 x 2 `H` (row-major); zero when singular.
fn solve(h: &[f64], g: &[f64]) -> Vec<f64> {
    match g.len() {
        1 if h[0] > 0.0 => vec![g[0] / h[0]],
        2 => {
            let det = h[0] * h[3] - h[1] * h[2];
            if det.abs() <= 1e-300 {
                return vec![0.0; 2];
            }
            vec![(h[3] * g[0] - h[1] * g[1]) / det, (h[0] * g[1] - h[2] * g[0]) / det]
        }
        n => vec![0.0; n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quadratic whose unconstrained minimiser lies outside: the minimiser on the simplex
    /// is the nearest point of the right face, here the edge w_2 = 0 at (0.75, 0.25, 0).
    #[test]
    fn finds_a_minimiser_on_a_face() {
        // |w - (1, 0.5, -0.5)|^2 restricted to the simplex.
        let target = [1.0, 0.5, -0.5];
        let gram = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let loss = MixtureLoss::Quadratic { gram, h: target, constant: dot(&target, &target) };
        let (w, v) = minimise_on_simplex(&loss);
        for (got, want) in w.iter().zip([0.75, 0.25, 0.0]) {
            assert!((got - want).abs() < 1e-12, "{w:?}");
        }
        assert!((v - (0.0625 + 0.0625 + 0.25)).abs() < 1e-12);
    }

    /// The log-loss of rows that favour component 1: all weight there.
    #[test]
    fn log_loss_goes_to_the_best_component() {
        let at_label = vec![[0.2, 0.9, 0.1], [0.3, 0.8, 0.1], [0.1, 0.7, 0.1]];
        let (w, _) = minimise_on_simplex(&MixtureLoss::LogLoss { at_label, weights: None });
        assert_eq!(w, [0.0, 1.0, 0.0]);
    }
}

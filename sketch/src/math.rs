//! The float functions the sketch and the SDK core need, without std (the wasm build is `no_std`): `ln` and
//! `ceil` from the pure-Rust `libm` (identical results natively and in wasm), and an integer
//! power by squaring (what `f64::powi` compiles to, minus the std dependency).

pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

pub fn ceil(x: f64) -> f64 {
    libm::ceil(x)
}

pub fn powi(mut base: f64, exp: i32) -> f64 {
    let mut e = exp.unsigned_abs();
    let mut acc = 1.0;
    while e > 0 {
        if e & 1 == 1 {
            acc *= base;
        }
        base *= base;
        e >>= 1;
    }
    if exp < 0 {
        1.0 / acc
    } else {
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_std() {
        for &(b, e) in &[(10.0, 0), (10.0, 3), (10.0, -3), (1.0202, 806), (1.0202, -230), (2.0, 10)] {
            let (ours, std) = (powi(b, e), f64::powi(b, e));
            assert!((ours - std).abs() <= std.abs() * 1e-12, "{b}^{e}: {ours} vs {std}");
        }
        for &x in &[0.01, 1.0, 2.5, 1e7] {
            assert!((ln(x) - x.ln()).abs() < 1e-15 * x.ln().abs().max(1.0));
            assert_eq!(ceil(x), x.ceil());
        }
    }
}

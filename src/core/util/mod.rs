pub mod decimal;
pub mod hex;
pub mod json_read;
pub mod json_write;
pub mod math;
#[cfg(test)]
pub mod test_rng;

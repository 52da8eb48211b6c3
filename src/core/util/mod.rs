pub mod decimal;
pub mod hex;
pub mod json_read;
pub mod json_write;
pub mod math;
pub mod text;
pub mod url;
#[cfg(test)]
pub mod test_rng;

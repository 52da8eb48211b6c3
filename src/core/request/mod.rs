pub mod histogram;
pub mod kinds;
pub mod timeline;

//! Server-only domain code.

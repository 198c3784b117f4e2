//! How ready one live object is, read from its `status` alone (no request is made here).

//! ERNIE 3.0 / BERT fine-tuning for Chinese text classification on libtorch.

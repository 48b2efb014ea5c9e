"""Neural-network ops: convolution, matrix products, pooling, normalization, softmax."""

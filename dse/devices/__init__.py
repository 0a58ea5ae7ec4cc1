"""Device models: model shape (FLOPs, bytes), GPU, FPGA, link, power, and the placed-model seam."""

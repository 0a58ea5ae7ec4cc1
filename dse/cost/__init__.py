"""Pure, vectorised cost primitives: model shape, GPU, FPGA, link, power."""

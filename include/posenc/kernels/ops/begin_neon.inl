// posenc/kernels/ops/begin_neon.inl — the NEON "target region" (no include guard): NEON is the
// AArch64 baseline, so nothing is retargeted; the file exists so every ISA has the same shape.
#if defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: target regions do not nest"
#endif
#define POSENC_OPS_REGION_OPEN_ 0

// posenc/kernels/ops/end_target.inl — closes the region a begin_<isa>.inl opened (no include guard).
#if !defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: end_target.inl without begin_<isa>.inl"
#endif
#if defined(POSENC_OPS_REGION_DIAG_)
#pragma GCC diagnostic pop
#undef POSENC_OPS_REGION_DIAG_
#endif
#if POSENC_OPS_REGION_OPEN_
#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif
#endif
#undef POSENC_OPS_REGION_OPEN_

/*
 * nccl_dep.c — a library libfake_nccl_broken.so needs, built under a
 * soname no file carries: that libnccl is installed but cannot load.
 */
__attribute__((visibility("default"))) int oc_fake_nccl_dep(void)
{
    return 0;
}

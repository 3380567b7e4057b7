// The fatbinary of xfunc's CUDA kernels (src/cuda/kernels.cu, built by nvcc), embedded as the
// symbol xfunc_cuda_fatbin, which the driver loads on first use (include/xfunc/cuda/runtime.hpp).
// The assembler's .incbin reads the file at build time: no conversion step, any size.
asm(".section .rodata\n"
    ".balign 64\n"
    ".globl xfunc_cuda_fatbin\n"
    ".type xfunc_cuda_fatbin, @object\n"
    "xfunc_cuda_fatbin:\n"
    ".incbin \"" XFUNC_FATBIN_PATH "\"\n"
    ".byte 0\n"
    ".previous\n");

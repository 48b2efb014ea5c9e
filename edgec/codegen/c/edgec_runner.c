/* edgec_runner.c: runs one generated model on inputs read from raw files and writes its
 * outputs to raw files, so that an artifact can be run where Python cannot load it: under a
 * user-mode emulator (qemu-x86_64 -cpu Haswell, qemu-aarch64, qemu-arm) or on a device.
 *
 * Built by edgec/runtime/emulated.py with the artifact's own sources and flags, and
 *   -DEDGEC_MODEL=NAME -DEDGEC_HEADER="NAME.h" -DEDGEC_NUM_INPUTS=N -DEDGEC_NUM_OUTPUTS=M
 * and -DEDGEC_DOT_PRODUCT_KERNELS for a library that chooses its int8 kernels at run time.
 *
 *   usage: runner IN_0 ... IN_{N-1} OUT_0 ... OUT_{M-1}
 *
 * Each IN_i holds exactly NAME_input_bytes(i) bytes (the tensor, row-major); each OUT_i
 * receives NAME_output_bytes(i) bytes. The last line on stdout is "status CODE TEXT" with
 * NAME_run's status, after "dot_product_kernels 0|1" (NAME_dot_product_kernels()) where the
 * library has it. Exit status: 0 when NAME_run returned EDGEC_OK, 1 when it returned
 * another status, 2 when the runner itself failed (usage, I/O, memory; said on stderr). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include EDGEC_HEADER

#define EDGEC_CAT_(model, fn) model##_##fn
#define EDGEC_CAT(model, fn) EDGEC_CAT_(model, fn)
#define MODEL(fn) EDGEC_CAT(EDGEC_MODEL, fn)

/* Every buffer is 64-byte aligned, as the workspace must be and as the Python loader
 * aligns it, and exactly as long as the library says (so that AddressSanitizer, in a
 * sanitized build, sees an access past its end); buffers of zero bytes still get a real
 * pointer, since NAME_run rejects NULL. */
#define ALIGN 64

static void *raw[EDGEC_NUM_INPUTS + EDGEC_NUM_OUTPUTS + 1];
static int nraw;

static void *aligned_buffer(size_t nbytes)
{
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, nbytes ? nbytes : 1) != 0) {
        fprintf(stderr, "edgec_runner: out of memory (%zu bytes)\n", nbytes);
        exit(2);
    }
    memset(p, 0, nbytes ? nbytes : 1);
    return raw[nraw++] = p;
}

static void read_input(const char *path, void *dst, size_t nbytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "edgec_runner: cannot open input %s\n", path);
        exit(2);
    }
    size_t got = fread(dst, 1, nbytes, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != nbytes || extra) {
        fprintf(stderr, "edgec_runner: input %s must hold exactly %zu bytes\n", path, nbytes);
        exit(2);
    }
}

static void write_output(const char *path, const void *src, size_t nbytes)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(src, 1, nbytes, f) != nbytes || fclose(f) != 0) {
        fprintf(stderr, "edgec_runner: cannot write output %s\n", path);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const void *inputs[EDGEC_NUM_INPUTS + 1];
    void *outputs[EDGEC_NUM_OUTPUTS + 1];
    if (argc != 1 + EDGEC_NUM_INPUTS + EDGEC_NUM_OUTPUTS) {
        fprintf(stderr, "edgec_runner: usage: %s IN_0..IN_%d OUT_0..OUT_%d (%d files), got %d\n",
                argv[0], EDGEC_NUM_INPUTS - 1, EDGEC_NUM_OUTPUTS - 1,
                EDGEC_NUM_INPUTS + EDGEC_NUM_OUTPUTS, argc - 1);
        return 2;
    }
    for (int i = 0; i < EDGEC_NUM_INPUTS; ++i) {
        size_t nbytes = MODEL(input_bytes)(i);
        void *buf = aligned_buffer(nbytes);
        read_input(argv[1 + i], buf, nbytes);
        inputs[i] = buf;
    }
    for (int i = 0; i < EDGEC_NUM_OUTPUTS; ++i)
        outputs[i] = aligned_buffer(MODEL(output_bytes)(i));
    void *workspace = aligned_buffer(MODEL(workspace_size)());

    int status = MODEL(run)(inputs, outputs, workspace);
    if (status == 0)
        for (int i = 0; i < EDGEC_NUM_OUTPUTS; ++i)
            write_output(argv[1 + EDGEC_NUM_INPUTS + i], outputs[i], MODEL(output_bytes)(i));
#ifdef EDGEC_DOT_PRODUCT_KERNELS
    printf("dot_product_kernels %d\n", MODEL(dot_product_kernels)());
#endif
    printf("status %d %s\n", status, MODEL(status_string)(status));
    for (int i = 0; i < nraw; ++i)
        free(raw[i]);
    return status == 0 ? 0 : 1;
}

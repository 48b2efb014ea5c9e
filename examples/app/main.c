/* An app that links an edgec-generated library: it reads each input from a raw binary file,
 * runs the model once, writes each output to a raw binary file and prints its first values.
 *
 * Build against a library compiled to OUT with `--name mlp`:
 *   gcc -O2 -DMODEL=mlp -I OUT examples/app/main.c OUT/libmlp.a -lm -pthread -o app
 *   ./app input0.bin out     # writes out0.bin, out1.bin, ...
 *
 * The header is the whole contract: sizes, names and shapes come from it, and the workspace
 * is the only memory the library needs (allocated once here; a static arena works too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MODEL
#error "compile with -DMODEL=<library name>"
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(fn) CAT(MODEL, fn)
#include STR(MODEL.h)

static void *read_file(const char *path, size_t want)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    void *buf = malloc(want ? want : 1);
    size_t got = buf ? fread(buf, 1, want, f) : 0;
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (buf == NULL || got != want || extra) {
        fprintf(stderr, "%s: expected exactly %zu bytes\n", path, want);
        free(buf);
        return NULL;
    }
    return buf;
}

int main(int argc, char **argv)
{
    int n_in = 0, n_out = 0;
    while (API(_input_name)(n_in) != NULL)
        ++n_in;
    while (API(_output_name)(n_out) != NULL)
        ++n_out;
    if (argc != n_in + 2) {
        fprintf(stderr, "usage: %s", argv[0]);
        for (int i = 0; i < n_in; ++i)
            fprintf(stderr, " %s.bin", API(_input_name)(i));
        fprintf(stderr, " OUTPUT_PREFIX\n");
        return 2;
    }
    const void *inputs[16];
    void *outputs[16];
    if (n_in > 16 || n_out > 16)
        return 2;
    for (int i = 0; i < n_in; ++i) {
        inputs[i] = read_file(argv[1 + i], API(_input_bytes)(i));
        if (inputs[i] == NULL)
            return 1;
    }
    for (int i = 0; i < n_out; ++i)  /* aligned as the workspace: the kernels' stores run faster */
        outputs[i] = aligned_alloc(64, (API(_output_bytes)(i) + 64) / 64 * 64);
    size_t ws_bytes = API(_workspace_size)();
    void *workspace = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) / 64 * 64) : NULL;

    int status = API(_run)(inputs, outputs, workspace);
    if (status != EDGEC_OK) {
        fprintf(stderr, "run failed: %s\n", API(_status_string)(status));
        return 1;
    }
    for (int i = 0; i < n_out; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s%d.bin", argv[1 + n_in], i);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(outputs[i], 1, API(_output_bytes)(i), f) != API(_output_bytes)(i)) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        fclose(f);
        printf("%s:", API(_output_name)(i));
        if (API(_output_dtype)(i) == EDGEC_DTYPE_F32) {
            const float *y = outputs[i];
            size_t n = API(_output_bytes)(i) / sizeof(float);
            for (size_t k = 0; k < n && k < 6; ++k)
                printf(" %g", y[k]);
            if (n > 6)
                printf(" ...");
        }
        printf("\n");
    }
    for (int i = 0; i < n_in; ++i)
        free((void *)inputs[i]);
    for (int i = 0; i < n_out; ++i)
        free(outputs[i]);
    free(workspace);
    return 0;
}

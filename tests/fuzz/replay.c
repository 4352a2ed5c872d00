/* replay.c -- run the fuzz target on files, without libFuzzer.
 *
 * usage: replay FILE|DIR...   (a directory: every regular file in it, in
 * name order).  Calls LLVMFuzzerTestOneInput on each; the target aborts on
 * a failed check, ASan/UBSan (sanitizer build) stop on memory errors.
 * Prints how many inputs ran.  Built by automake as a check program and run
 * by tests/scripts/fuzz_replay.sh on tests/fuzz/corpus and
 * tests/fuzz/regressions. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int runs;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (!f) { perror(path); return 1; }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        fclose(f);
        return 1;
    }
    /* Exactly n bytes (as libFuzzer does), so over-reads are caught. */
    buf = malloc(n ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%ld bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    runs++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int bad = 0;
    if (!d) { perror(dir); return 1; }
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (strcmp(e->d_name, "README") == 0) continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!grown) { closedir(d); return 1; }
            names = grown;
        }
        names[n] = malloc(strlen(path) + 1);
        if (!names[n]) { closedir(d); return 1; }
        strcpy(names[n++], path);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        bad |= run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { perror(argv[i]); bad = 1; continue; }
        bad |= S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
    }
    printf("replay: %d inputs, %s\n", runs, bad ? "errors reading inputs" : "no failures");
    return bad;
}

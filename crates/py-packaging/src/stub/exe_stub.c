/* A stand-in for a symlink to an executable (wheels cannot hold symlinks): runs the program
 * named in `target_slot`, relative to this program's own directory (or absolute), with the
 * same arguments. The slot is filled in per link by rock-ci's py-packaging. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT 4096
static volatile const char target_slot[SLOT] = "@@ROCK_CI_EXE_STUB_TARGET_SLOT@@";

int main(int argc, char **argv) {
    (void)argc;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        fprintf(stderr, "could not determine path of main program\n");
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) {
        fprintf(stderr, "could not find path component of main program: '%s'\n", self);
        return 1;
    }
    *slash = 0;
    char rel[SLOT];
    for (size_t i = 0; i < SLOT; i++) {
        rel[i] = target_slot[i];
        if (!rel[i]) break;
    }
    rel[SLOT - 1] = 0;
    static char target[PATH_MAX + SLOT];
    if (rel[0] == '/')
        snprintf(target, sizeof target, "%s", rel);
    else
        snprintf(target, sizeof target, "%s/%s", self, rel);
    static char resolved[PATH_MAX];
    const char *path = realpath(target, resolved) ? resolved : target;
    execv(path, argv);
    fprintf(stderr, "could not exec %s: %s\n", path, strerror(errno));
    return 1;
}

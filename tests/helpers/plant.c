/* A planted library for the cache's security and fault tests: if anything ever
 * dlopens it, its constructor appends a line to the file named by CV_PLANT_MARKER.
 * It defines no PyInit function, so an import of it fails right after that. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void cv_plant_mark(void) {
    const char *path = getenv("CV_PLANT_MARKER");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "planted code ran in pid %d\n", (int)getpid());
        fclose(f);
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Links Skein's C API as a subproject's target (Skein::c): skein_version() and
 * skein_version_numbers() at run time must be the headers' SKEIN_VERSION_* (the same tree). */
#include <skein/skein.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int major = -1, minor = -1, patch = -1;
  const char* text = skein_version();
  if (text == NULL || strcmp(text, SKEIN_VERSION_STRING) != 0) {
    fprintf(stderr, "FAIL: skein_version() is '%s', the headers say '%s'\n", text ? text : "(null)",
            SKEIN_VERSION_STRING);
    return 1;
  }
  skein_version_numbers(&major, &minor, &patch);
  if (major != SKEIN_VERSION_MAJOR || minor != SKEIN_VERSION_MINOR ||
      patch != SKEIN_VERSION_PATCH) {
    fprintf(stderr, "FAIL: skein_version_numbers() gave %d.%d.%d, the headers say %s\n", major,
            minor, patch, SKEIN_VERSION_STRING);
    return 1;
  }
  printf("Skein's C API %s through Skein::c: OK\n", text);
  return 0;
}

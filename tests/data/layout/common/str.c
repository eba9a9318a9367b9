/* Allowed: a folder includes its own header. */
#include "common.h"

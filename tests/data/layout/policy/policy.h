/* Allowed: policy includes common. */
#include "common.h"

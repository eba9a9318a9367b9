/* Allowed: tests include anything. */
#include "proxy.h"
#include "common.h"

/* Allowed: the codec includes common, by a path from its own folder. */
#include "../../common/common.h"

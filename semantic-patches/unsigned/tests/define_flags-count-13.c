/* A kernel.h with the bit count (v4.10 on) where TAINT_OOT_MODULE is last. */
#define TAINT_CRAP			10
#define TAINT_FIRMWARE_WORKAROUND	11
#define TAINT_OOT_MODULE		12
#define TAINT_FLAGS_COUNT		13
#define TAINT_FLAGS_MAX			((1UL << TAINT_FLAGS_COUNT) - 1)

/* Bit 13 already used by another flag: the layer must refuse. */
#define TAINT_OOT_MODULE		12
#define TAINT_SOFTLOCKUP		13
#define TAINT_FLAGS_COUNT		14

/* No TAINT_OOT_MODULE at all: a shape the layer does not know. */
#define TAINT_CRAP			10
#define TAINT_FIRMWARE_WORKAROUND	11

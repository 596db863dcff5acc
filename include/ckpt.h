/* ckpt.h - umbrella header: includes every public header of ckpt. */
#ifndef CKPT_H
#define CKPT_H

#include "ckpt/bundle.h"
#include "ckpt/clock.h"
#include "ckpt/common.h"
#include "ckpt/coordinator.h"
#include "ckpt/errors.h"
#include "ckpt/hooks.h"
#include "ckpt/io.h"
#include "ckpt/log.h"
#include "ckpt/saver.h"
#include "ckpt/session.h"
#include "ckpt/state.h"
#include "ckpt/tensor.h"
#include "ckpt/version.h"

#endif

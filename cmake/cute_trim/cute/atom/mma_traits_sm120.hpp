// Stands in for CuTe 4.2.0's <cute/atom/mma_traits_sm120.hpp> in the sm80- and sm90-class units, which use
// no Blackwell (sm100/sm120) or sparse atoms; CMakeLists.txt (FA_CUTE_TRIM) puts this folder
// ahead of CuTe's. mma_atom.hpp and copy_atom.hpp include the Blackwell atoms unconditionally,
// and parsing them (with the sparse GMMA traits they pull in) is ~8% of such a unit's front end.
// A unit that does need one fails to compile with the missing name; the sm100a units never see
// this folder.
#pragma once

//! latlab charts: data in, SVG string out (filled in next).

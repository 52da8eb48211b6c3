'use client';
// The client component: init() runs in the browser only (the scenario calls it), from an effect.
import { useEffect } from 'react';
import { run } from '../../app/scenario.js';

export default function Chat() {
  useEffect(() => {
    window.__run = run;
  }, []);
  return <div id="answer" />;
}
